"""The one parse of a response, shared by everything that needs it.

The spider, the page-directive middleware, the mirror and the reports all call
``parsed_page(response)``; the page is parsed on the first call and the result
is kept (weakly) with the response, so no component parses it again.
``response_of(item)`` gives pipelines the response an item was made from;
``directives_of(response)`` the page's robots directives, as decided by the
page-directives middleware (webspider.directives.middleware).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy.http import HtmlResponse, TextResponse

from webspider.page.links import LINK_RULES, ParsedPage, extract_css, extract_page
from webspider.page.options import PageOptions

if TYPE_CHECKING:
    from scrapy.http import Headers, Response

    from webspider.directives.parse import Directives

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
CSS_TYPES = frozenset({"text/css"})

_pages: WeakKeyDictionary[Response, ParsedPage | None] = WeakKeyDictionary()
_responses: WeakKeyDictionary[Any, Response] = WeakKeyDictionary()
_directives: WeakKeyDictionary[Response, Directives] = WeakKeyDictionary()


def media_type(response: Response) -> str | None:
    """Media type of the Content-Type header, lower-cased, without parameters."""
    return headers_media_type(response.headers)


def headers_media_type(headers: Headers) -> str | None:
    """media_type() for headers alone (before the body, no response yet)."""
    raw = headers.get(b"Content-Type")
    if not raw:
        return None
    value = raw.split(b";", 1)[0].strip().lower()
    return value.decode("latin-1") if value else None


def is_html(response: Response) -> bool:
    mtype = media_type(response)
    if mtype is None:
        return isinstance(response, HtmlResponse)
    return mtype in HTML_TYPES


def parsed_page(response: Response, spider: Any = None) -> ParsedPage | None:
    """The parsed HTML (or CSS) of a response; None for anything else.

    Links are taken by the ``link_rules`` of ``spider`` (webspider's own
    LINK_RULES for None or a spider without them), within the bounds of its
    crawl's PageOptions (the defaults without a crawler). Every component of
    the crawl passes the crawl's spider, so whichever parses first parses by
    the spider's rules; later calls (yours included) get that parse."""
    try:
        return _pages[response]
    except KeyError:
        pass
    page: ParsedPage | None = None
    kind = page_kind(response)
    if kind is not None:
        assert isinstance(response, TextResponse)
        crawler = getattr(spider, "crawler", None)
        bounds = PageOptions.of(crawler.settings) if crawler else PageOptions()
        body, url, encoding = response.body, response.url, response.encoding
        if kind == "html":
            rules = getattr(spider, "link_rules", LINK_RULES)
            page = extract_page(
                body,
                url,
                encoding,
                rules,
                max_links=bounds.link_cap,
                budget=bounds.budget,
            )
        else:
            page = extract_css(body, url, encoding, max_links=bounds.link_cap)
    _pages[response] = page
    return page


def set_parsed_page(response: Response, page: ParsedPage | None) -> None:
    """Give ``response`` its parse, read elsewhere (the page worker: see
    webspider.pageworker.readahead); ``parsed_page`` returns it."""
    _pages[response] = page


def page_kind(response: Response) -> str | None:
    """ "html" or "css" for a response ``parsed_page`` reads, else None."""
    if not isinstance(response, TextResponse):
        return None
    if is_html(response):
        return "html"
    return "css" if media_type(response) in CSS_TYPES else None


def remember_response(item: Any, response: Response) -> None:
    _responses[item] = response


def response_of(item: Any) -> Response | None:
    """The response an item was made from, while that item is alive."""
    return _responses.get(item)


def set_directives(response: Response, directives: Directives) -> None:
    _directives[response] = directives


def directives_of(response: Response) -> Directives | None:
    """The page's final robots directives (None before they were decided, or
    when the page-directives middleware is disabled)."""
    return _directives.get(response)
