"""urllib.parse.urljoin for the many links of one page, without its cost.

A page's links are joined with the same base, and nearly all of them are
plain: ``library/os.html#os.getcwd``, ``../_static/pygments.css``,
``/3/whatsnew/``, ``https://example.org/x``. urljoin splits and reassembles
base and link for each one; for a plain link the answer is the
base's directory (or origin) followed by the link, so ``UrlJoiner`` asks
urljoin once per base for that prefix and then only concatenates. Anything
else — dot segments after the leading ``../``, empty segments, ``;``, ``:``,
backslashes, white space or control characters, an empty query or
fragment, a lone ``?query`` or ``#fragment``, a host in brackets — goes to
urljoin itself, so the result is always exactly urljoin's (the property
test in tests/test_utils_urljoin.py compares the two).
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

# One path segment that urljoin copies as it is: not empty, not a dot
# segment (no segment starting with "." at all, to keep it simple), none of
# the characters urlsplit strips or treats specially.
_SEG = r"[^/.?#;:\\\x00-\x20\x7f][^/?#;:\\\x00-\x20\x7f]*+"
_TAIL = r"(?:\?[^#\\\x00-\x20\x7f]++)?(?:#[^\\\x00-\x20\x7f]++)?\Z"
_RELATIVE_RE = re.compile(rf"(/|(?:\.\./)*+)((?:{_SEG}/)*+(?:{_SEG})?){_TAIL}")
_ABSOLUTE_RE = re.compile(
    r"https?://[A-Za-z0-9._~%!$&'()*+,=:@-]++(?:/[^?#;\\\x00-\x20\x7f]*+)?" + _TAIL
)
_HTTP_BASE_RE = re.compile(r"https?://[A-Za-z0-9._~%!$&'()*+,=:@-]")


class UrlJoiner:
    """``join(href)`` is ``urljoin(base, href)`` (ValueError included)."""

    __slots__ = ("_dirs", "_fast", "_root", "base")

    def __init__(self, base: str) -> None:
        self.base = base
        #: "scheme://host/", what a link starting with "/" follows
        self._root: str | None = None
        #: number of leading "../" → the directory the rest of a link follows
        self._dirs: dict[int, str | None] = {}
        # urljoin raises for any link when the base does not parse
        self._fast = True
        try:
            urlsplit(base)
        except ValueError:
            self._fast = False
        if self._fast and _HTTP_BASE_RE.match(base):
            self._root = self._prefix("/")

    def _prefix(self, lead: str) -> str | None:
        try:
            probe = urljoin(self.base, lead + "x")
        except ValueError:
            return None
        return probe[:-1] if probe.endswith("x") else None

    def join(self, href: str) -> str:
        if self._fast and _ABSOLUTE_RE.match(href):
            return href
        if self._root is not None:
            match = _RELATIVE_RE.match(href)
            if match is not None:
                lead = match.group(1)
                if lead == "/":
                    return self._root + href[1:]
                if lead or match.end(2):  # not "", "?query" or "#fragment"
                    ups = len(lead) // 3
                    try:
                        prefix = self._dirs[ups]
                    except KeyError:
                        prefix = self._dirs[ups] = self._prefix(lead)
                    if prefix is not None:
                        return prefix + href[len(lead) :]
        return urljoin(self.base, href)
