"""URL prefix lists (``include``/``exclude``): plain prefixes "up to that point".

``http://www.bbc.co.uk/sports`` covers ``/sports``, ``/sports/football`` and
also ``/sportsday``; ``http://www.bbc.co.uk/sports/`` is "this folder only".
Both sides are compared in the form URLs are de-duplicated in
(webspider.utils.url.canonical_url: scheme and host lower-cased, default port
dropped, percent-encoding normalised), and by default case-insensitively in
the path too.

Prefixes are bucketed by ``scheme://host[:port]``, so matching a URL costs one
dict lookup plus one ``str.startswith`` over the (usually few) prefixes of its
host.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from webspider.utils.url import FETCHABLE_SCHEMES, canonical_url, url_scheme

# "localhost:8000/docs" parses with scheme "localhost": a "scheme" followed by
# a port number is a host.
_HOST_PORT_RE = re.compile(r"^[^:/]+:\d+(?:[/?#]|$)")


class BadPrefixError(ValueError):
    """A prefix that is not an http(s) URL; the message names it."""


def normalize_prefix(prefix: str, case_sensitive: bool = False) -> list[str]:
    """The canonical form(s) of a prefix given by the user.

    A prefix without a scheme (``example.org/docs/``) stands for both http
    and https. The query part, if any, is kept as written: canonicalising a
    partial query (``?s``) would append ``=`` and stop it matching ``?sort=1``.
    """
    raw = prefix.strip()
    if not raw or any(ch.isspace() for ch in raw):
        raise BadPrefixError(f"invalid URL prefix {prefix!r}")
    scheme = url_scheme(raw)
    if scheme and not _HOST_PORT_RE.match(raw):
        if scheme not in FETCHABLE_SCHEMES:
            raise BadPrefixError(
                f"invalid URL prefix {prefix!r}: only http and https are crawled"
            )
        if raw[len(scheme) + 1 : len(scheme) + 3] != "//":
            raise BadPrefixError(
                f"invalid URL prefix {prefix!r}: expected {scheme}://HOST/…"
            )
        candidates = [raw]
    else:
        candidates = [f"http://{raw}", f"https://{raw}"]
    result: list[str] = []
    for url in candidates:
        base, sep, query = url.partition("?")
        try:
            canon = canonical_url(base)
        except ValueError as exc:
            raise BadPrefixError(f"invalid URL prefix {prefix!r}: {exc}") from None
        if _split(canon) is None:
            raise BadPrefixError(f"invalid URL prefix {prefix!r}: it has no host")
        canon += sep + query
        result.append(canon if case_sensitive else canon.lower())
    return result


def _split(canon: str) -> tuple[str, str] | None:
    """``http://host:81/a?b`` → (``http://host:81``, ``/a?b``)."""
    start = canon.find("://")
    if start < 0:
        return None
    slash = canon.find("/", start + 3)
    if slash < 0:
        return (canon, "/") if len(canon) > start + 3 else None
    if slash == start + 3:
        return None
    return canon[:slash], canon[slash:]


class PrefixSet:
    """A set of URL prefixes; ``matches(url)`` says whether one covers ``url``."""

    def __init__(self, prefixes: Iterable[str], case_sensitive: bool = False) -> None:
        self.case_sensitive = case_sensitive
        buckets: dict[str, list[str]] = {}
        self.prefixes: list[str] = []
        for prefix in prefixes:
            for canon in normalize_prefix(prefix, case_sensitive):
                parts = _split(canon)
                assert parts is not None
                self.prefixes.append(canon)
                buckets.setdefault(parts[0], []).append(parts[1])
        self._buckets = {origin: tuple(paths) for origin, paths in buckets.items()}

    def __bool__(self) -> bool:
        return bool(self._buckets)

    def key(self, url: str) -> str:
        """The form of ``url`` prefixes are compared with."""
        canon = canonical_url(url)
        return canon if self.case_sensitive else canon.lower()

    def matches(self, url: str) -> bool:
        return self.matches_key(self.key(url))

    def matches_key(self, key: str) -> bool:
        parts = _split(key)
        if parts is None:
            return False
        paths = self._buckets.get(parts[0])
        return paths is not None and parts[1].startswith(paths)


def prefix_reason(url: str, include: PrefixSet, exclude: PrefixSet) -> str | None:
    """``"exclude"`` when ``url`` starts with an exclude prefix (exclude wins),
    ``"include"`` when there is an include list and it starts with none of its
    prefixes, else None. The one rule, for the middleware and the seed check."""
    if not include and not exclude:
        return None
    key = include.key(url)  # both sets share the normalisation
    if exclude and exclude.matches_key(key):
        return "exclude"
    if include and not include.matches_key(key):
        return "include"
    return None
