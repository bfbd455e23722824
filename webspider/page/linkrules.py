"""Which elements of a page give links, and what kind of link each is.

LINK_RULES is the spider's link-following rules (webspider's equivalent of a
CrawlSpider's rules): a user changes what is followed here, in one place, or
gives a spider subclass its own ``link_rules``. Re-exported by
webspider.page.links.
"""

from __future__ import annotations

from dataclasses import dataclass

#: A link to another page: followed, and counted against the depth limit.
PAGE = "page"
#: Something a page needs to display (image, stylesheet, script, frame…):
#: it belongs to the page, as with wget --page-requisites.
REQUISITE = "requisite"


@dataclass(frozen=True)
class LinkRule:
    """Links come from attribute ``attr`` of elements ``tag``."""

    tag: str
    attr: str
    kind: str = REQUISITE
    #: the attribute holds a srcset-style list of "URL descriptor" candidates
    srcset: bool = False


LINK_RULES: tuple[LinkRule, ...] = (
    LinkRule("a", "href", PAGE),
    LinkRule("area", "href", PAGE),
    LinkRule("link", "href", PAGE),  # kind refined by rel, see link_kind
    LinkRule("img", "src"),
    LinkRule("img", "srcset", srcset=True),
    LinkRule("script", "src"),
    LinkRule("iframe", "src"),
    LinkRule("frame", "src"),
    LinkRule("source", "src"),
    LinkRule("source", "srcset", srcset=True),
    LinkRule("video", "src"),
    LinkRule("video", "poster"),
    LinkRule("audio", "src"),
    LinkRule("track", "src"),
    LinkRule("embed", "src"),
    LinkRule("input", "src"),  # only type=image has a src that loads
    LinkRule("object", "data"),
)

#: rel values of <link> that make it something the page needs, not a page.
REQUISITE_RELS = frozenset(
    {
        "stylesheet",
        "icon",
        "shortcut",
        "apple-touch-icon",
        "preload",
        "modulepreload",
        "manifest",
        "mask-icon",
        "prefetch",
    }
)


def link_kind(rule: LinkRule, rel: str) -> str:
    """The kind of a link found by ``rule`` on an element with ``rel``: a
    ``<link>`` is a requisite when its rel says so (stylesheet, icon…)."""
    if rule.tag == "link" and REQUISITE_RELS.intersection(rel.lower().split()):
        return REQUISITE
    return rule.kind
