"""The one factory for page requests: every request the spider's callbacks answer.

Pages are requested from five places — the spider's start URLs and the links
of each page (webspider.spiders), the seeds of a round from the deferred
frontier (webspider.frontier.scheduler), the URLs of a sitemap
(webspider.politeness.sitemaps) and the checks of outside links
(webspider.reports.linkcheck) — and all of them must reach ``spider.parse``
and ``spider.on_error`` with the same meta keys, spelled the same way. So
they all call ``page_request``, or ``link_requests``, its form for the many
links of one page (the spider's per-link loop, a sitemap's URLs). It lives
beside webspider.keys, below every feature, so that the frontier, politeness
and the reports build page requests without importing the spider (the top
floor): the spider is typed by the PageSpider protocol, and crawl-wide
components find it with ``page_spider(crawler)``.

Each fact goes into meta only when given (None is not given): the sites set
different keys on purpose (a start URL has no referer or link kind; a link
check has no depth, so the level barrier never waits for it; a link's round
is set by the depth middleware from its page), and every reader of these
keys uses ``meta.get``, so a key left out reads as the None it would hold.

Requests of other callbacks are not page requests and are built where they
are used: robots.txt (no callback), the sitemap files themselves
(SitemapSeeder.request_sitemap).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from scrapy import Request

from webspider.keys import META_CHECK_ONLY, META_LINK_KIND, META_REFERER, META_ROUND
from webspider.utils.url import is_safe_url

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure


class PageSpider(Protocol):
    """The callbacks of a page request (webspider.spiders.WebSpider has them)."""

    def parse(self, response: Response, **kwargs: Any) -> object: ...

    def on_error(self, failure: Failure) -> object: ...


def page_spider(crawler: Crawler) -> PageSpider | None:
    """The crawl's spider when it has the page callbacks, else None (page
    requests then carry no callback: Scrapy calls the spider's parse)."""
    spider = crawler.spider
    # not isinstance with a runtime_checkable protocol: 5 µs a call, and this
    # runs for every seed and link check
    if hasattr(spider, "parse") and hasattr(spider, "on_error"):
        return cast("PageSpider", spider)
    return None


def page_request(
    spider: PageSpider | None,
    url: str,
    *,
    depth: int | None = None,
    referer: str | None = None,
    kind: str | None = None,
    round: int | None = None,
    method: str = "GET",
    check_only: bool = False,
) -> Request:
    """A request for ``url`` answered by ``spider.parse`` / ``spider.on_error``.

    ``depth``: the ``depth`` meta key (Scrapy's); ``referer``: the page the
    link is on; ``kind``: how the link was found ("page" or "requisite");
    ``round``: the round a seed starts; ``check_only``: a link check
    (check_external), which is let out of the scope (``allow_offsite``) and
    never followed. Facts left as None are not set (see module docstring).
    """
    meta: dict[str, Any] = {}
    if depth is not None:
        meta["depth"] = depth
    if round is not None:
        meta[META_ROUND] = round
    if referer is not None:
        meta[META_REFERER] = referer
    if kind is not None:
        meta[META_LINK_KIND] = kind
    if check_only:
        meta[META_CHECK_ONLY] = True
        meta["allow_offsite"] = True
    callback, errback = _callbacks(spider)
    return Request(url, method=method, callback=callback, errback=errback, meta=meta)


def link_requests(
    spider: PageSpider | None, *, depth: int, referer: str
) -> Callable[[str, str], Request]:
    """``make(url, kind)``: the requests for the links found on one page,
    the same as ``page_request(spider, url, depth=depth, referer=referer,
    kind=kind)``.

    For loops over a page's links (a thousand on an index page), at no cost
    over an inline ``Request(...)``: what the links share is bound once, and
    each link kind's meta is built once, as Request shallow-copies the meta
    it is given (documented; its values here are immutable). That saves
    what the extra call costs; page_request per link would add 3 to 8% to
    each link's Request (bench/seen_overhead.py). A link whose URL is
    already safe skips Scrapy's quoting, as in ``safe_url_request``."""
    callback, errback = _callbacks(spider)
    #: kind → its meta, and the same with the verbatim flag
    metas: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}

    def make(url: str, kind: str) -> Request:
        pair = metas.get(kind)
        if pair is None:
            meta = {"depth": depth, META_REFERER: referer, META_LINK_KIND: kind}
            pair = metas[kind] = (meta, {**meta, _VERBATIM: True})
        if is_safe_url(url):
            # as safe_url_request, with the kind's meta built once
            request = Request(url, callback=callback, errback=errback, meta=pair[1])
            del request.meta[_VERBATIM]
            return request
        return Request(url, callback=callback, errback=errback, meta=pair[0])

    return make


#: Scrapy's meta key for a URL used as given, not quoted (``verbatim_url``)
_VERBATIM = "verbatim_url"


def safe_url_request(
    url: str,
    *,
    meta: dict[str, Any],
    callback: Callable[..., object] | None = None,
    errback: Callable[[Failure], object] | None = None,
    method: str = "GET",
    priority: int = 0,
    headers: dict[str, Any] | None = None,
) -> Request:
    """``Request(url, …)`` with these arguments, the same in every attribute,
    without Scrapy's quoting of the URL when ``is_safe_url`` says it would
    return it unchanged: w3lib's ``safe_url_string`` is half of what a
    Request costs to build (~4 of ~8 µs), paid for every URL the crawl
    state hands back and every link of a page, nearly all of them already
    safe. Scrapy skips it for a request whose meta has ``verbatim_url``;
    the key is set while the Request is built and taken out again, so
    nothing downstream (its fingerprint, a download handler) sees it. A
    meta that sets ``verbatim_url`` itself, or an empty one (Scrapy keeps
    no dict then), is built the ordinary way."""
    verbatim = bool(meta) and _VERBATIM not in meta and is_safe_url(url)
    request = Request(
        url,
        method=method,
        callback=callback,
        errback=errback,
        meta={**meta, _VERBATIM: True} if verbatim else meta,
        priority=priority,
        headers=headers,
    )
    if verbatim:
        del request.meta[_VERBATIM]
    return request


def _callbacks(
    spider: PageSpider | None,
) -> tuple[Callable[..., object] | None, Callable[[Failure], object] | None]:
    if spider is None:
        return None, None
    return spider.parse, spider.on_error
