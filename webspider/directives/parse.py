"""Robots directives a page gives about itself: parse them, combine them.

Three sources say whether a page may be indexed and its links followed:

- ``<meta name="robots" content="...">`` and ``<meta name="<our product
  token>">`` (``webspider``): names and values case-insensitive, values
  separated by commas and/or white space, unknown values ignored;
- the ``X-Robots-Tag`` response header, possibly repeated, possibly with
  several comma-separated values, optionally scoped to one crawler
  (``X-Robots-Tag: webspider: noindex`` applies to us, ``otherbot: noindex``
  does not);
- ``rel="nofollow"`` on single links (found by webspider.page.links).

Several statements combine: the most restrictive wins (``noindex`` from any
source means noindex). ``none`` is ``noindex, nofollow``; ``all``, ``index``
and ``follow`` restrict nothing and loosen nothing.

Pure functions: nothing here knows Scrapy's crawler (tests are tables).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from webspider.utils.url import canonical_url

if TYPE_CHECKING:
    from collections.abc import Iterable

#: ``<meta name=...>`` that speaks to every crawler
ROBOTS_META_NAME = "robots"

#: X-Robots-Tag directives that carry a value after a colon
#: (``unavailable_after: 25 Jun 2010 15:00:00 PST``, ``max-snippet: 20``):
#: the word before their colon is not a crawler's name.
VALUED_DIRECTIVES = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)

_SPLIT_RE = re.compile(r"[\s,]+")
# "name: rest" at the start of one comma-separated part of an X-Robots-Tag value
_SCOPED_RE = re.compile(r"^\s*([A-Za-z0-9_.*-]+)\s*:(.*)$", re.DOTALL)


@dataclass
class Directives:
    """What may be done with one page. Mutable: the spider's
    ``adjust_directives`` and ``page_found`` handlers may tighten or loosen it.
    """

    #: the page must not be exported (nor mirrored)
    noindex: bool = False
    #: none of the page's links may be followed
    nofollow: bool = False
    #: canonical URLs of single links not to follow (``rel="nofollow"``);
    #: use ``dont_follow``/``follow`` rather than canonicalising yourself
    nofollow_links: set[str] = field(default_factory=set)

    def merge(self, other: Directives) -> None:
        """Combine ``other`` into this one; the most restrictive wins."""
        self.noindex = self.noindex or other.noindex
        self.nofollow = self.nofollow or other.nofollow
        self.nofollow_links |= other.nofollow_links

    def dont_follow(self, url: str) -> None:
        """Do not follow the link to ``url`` (as if it had rel="nofollow")."""
        self.nofollow_links.add(canonical_url(url))

    def follow(self, url: str) -> None:
        """Follow the link to ``url`` even if it has rel="nofollow"."""
        self.nofollow_links.discard(canonical_url(url))

    def follows(self, url: str) -> bool:
        """Whether a link of this page to ``url`` may be followed."""
        if self.nofollow:
            return False
        return not self.nofollow_links or canonical_url(url) not in self.nofollow_links


def apply_words(directives: Directives, words: Iterable[str]) -> None:
    """Tighten ``directives`` by the robots words given (lower-cased)."""
    for word in words:
        if word == "noindex":
            directives.noindex = True
        elif word == "nofollow":
            directives.nofollow = True
        elif word == "none":
            directives.noindex = directives.nofollow = True
        # "all", "index", "follow" and unknown words change nothing: a page
        # cannot loosen what another statement of the same page restricts.


def parse_robots_content(content: str) -> Directives:
    """The directives of one ``<meta name="robots" content="...">`` value."""
    directives = Directives()
    apply_words(directives, _SPLIT_RE.split(content.lower()))
    return directives


def meta_directives(metas: Iterable[tuple[str, str]], product: str) -> Directives:
    """Combined directives of the ``robots`` and ``product`` meta elements.

    ``metas`` are (lower-cased name, content) pairs, as ParsedPage.metas."""
    directives = Directives()
    names = {ROBOTS_META_NAME, product.lower()}
    for name, content in metas:
        if name in names:
            apply_words(directives, _SPLIT_RE.split(content.lower()))
    return directives


def header_directives(values: Iterable[str], product: str) -> Directives:
    """Combined directives of the X-Robots-Tag header values, for ``product``.

    Each value is a comma-separated list. A part ``name: words`` scopes it
    and the following parts of the same value to crawler ``name`` (Google's
    form ``X-Robots-Tag: googlebot: nofollow``); unscoped parts apply to
    every crawler."""
    directives = Directives()
    product = product.lower()
    for value in values:
        applies = True
        for part in value.lower().split(","):
            words = part
            match = _SCOPED_RE.match(part)
            if match and match.group(1) not in VALUED_DIRECTIVES:
                applies = match.group(1) == product
                words = match.group(2)
            if applies:
                apply_words(directives, _SPLIT_RE.split(words))
    return directives
