"""A Scrapy Request as plain data (StoredRequest), and back.

The crawl state stores requests as data a JSON encoder could write, never
pickled. Every request webspider makes for a page, a link or a seed fits: a
GET or HEAD of a URL, calling back a method of the spider, with ``depth``,
``webspider_round``, ``webspider_referer``, ``webspider_link_kind`` (kept in
columns of their own) and a few JSON values in meta (a redirect's
``redirect_urls``, a link check's ``webspider_check_only`` …).

A request that does not fit — a body, cookies, ``cb_kwargs``, a callback
that is not a method of the spider, a meta value JSON cannot write, headers
other than the Referer that Scrapy's RefererMiddleware sets to the page it
was found on — is not turned into data (``to_stored`` returns None); the
scheduler keeps it in memory instead.

A redirect is the exception to the headers rule. Scrapy builds it from the
request it redirects as that request was sent: with the headers the
downloader middlewares set (User-Agent, Accept, Accept-Encoding, an
Authorization…) and the Referer the redirect middleware chose. When the
redirected request came from the crawl state (``from_stored`` marks it),
those headers are the middlewares', which set them again when the redirect's
target is downloaded: they are left out (never written to the state), and
the Referer is kept as sent. Kept in memory instead, the target would be
lost at a kill once the redirect's lease is committed done — and a target
linked from nowhere else would never be fetched.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from scrapy import Request

from webspider.frontier.state import StoredRequest
from webspider.keys import META_LINK_KIND, META_REFERER, META_ROUND
from webspider.requests import safe_url_request

if TYPE_CHECKING:
    from scrapy import Spider

#: meta kept in columns of their own
_COLUMNS = frozenset({"depth", META_ROUND, META_REFERER, META_LINK_KIND})
#: meta Scrapy sets for one download attempt, meaningless to a later one
_TRANSIENT = frozenset({"download_slot", "download_latency", "_scheme_proxy"})
#: names of a callback / errback other than parse / on_error, in meta
_CALLBACK = "_webspider_callback"
_ERRBACK = "_webspider_errback"
#: the Referer header was the referer (RefererMiddleware's), in meta
REFERER_HEADER = "_webspider_referer_header"
#: the request was made by ``from_stored`` (a redirect of it carries only the
#: downloader middlewares' headers besides the Referer), in meta
_FROM_STATE = "_webspider_from_state"


def _method_name(func: Any, spider: Spider | None, default: str) -> str | None:
    """ "" for the default (or None given), the name of another spider
    method, None for anything else (which cannot be stored)."""
    if func is None:
        return ""
    if getattr(func, "__self__", None) is not spider or spider is None:
        return None
    name = getattr(func, "__name__", None)
    if not isinstance(name, str) or getattr(spider, name, None) != func:
        return None
    return "" if name == default else name


def to_stored(
    request: Request, key: str, spider: Spider | None
) -> StoredRequest | None:
    """``request`` as data, or None when it cannot be written as data."""
    if (
        request.method not in ("GET", "HEAD")
        or request.body
        or request.cookies
        or request.cb_kwargs
        or request.flags
        or request.dont_filter
    ):
        return None
    callback = _method_name(request.callback, spider, "parse")
    errback = _method_name(request.errback, spider, "on_error")
    if callback is None or errback is None:
        return None
    meta = request.meta
    referer = meta.get(META_REFERER)
    if referer is not None and not isinstance(referer, str):
        return None
    kind = meta.get(META_LINK_KIND, "page")
    depth = meta.get("depth", 0)
    round_ = meta.get(META_ROUND, 0)
    if not (
        isinstance(kind, str) and isinstance(depth, int) and isinstance(round_, int)
    ):
        return None
    extra: dict[str, Any] = {
        k: v
        for k, v in meta.items()
        if k not in _COLUMNS and k not in _TRANSIENT and k != _FROM_STATE
    }
    if META_LINK_KIND not in meta:
        extra[META_LINK_KIND] = None  # restored as absent
    if callback:
        extra[_CALLBACK] = callback
    if errback:
        extra[_ERRBACK] = errback
    headers = request.headers
    if headers:
        values = headers.getlist("Referer")
        if len(values) > 1:
            return None
        if meta.get(_FROM_STATE) and "redirect_urls" in meta:
            # a redirect: its other headers are the downloader middlewares'
            if values:
                value = values[0].decode("latin-1")
                extra[REFERER_HEADER] = True if value == referer else value
        elif list(headers) == [b"Referer"] and values[0].decode("latin-1") == referer:
            extra[REFERER_HEADER] = True
        else:
            return None
    if extra:
        try:
            json.dumps(extra)
        except (TypeError, ValueError):
            return None
    return StoredRequest(
        key=key,
        url=request.url,
        depth=depth,
        round=round_,
        referer=referer,
        kind=kind,
        priority=request.priority,
        method=request.method,
        meta=extra,
    )


def from_stored(stored: StoredRequest, spider: Spider | None) -> Request:
    """The Request ``stored`` was made from."""
    extra = dict(stored.meta)
    callback = str(extra.pop(_CALLBACK, "parse"))
    errback = str(extra.pop(_ERRBACK, "on_error"))
    referer_header = extra.pop(REFERER_HEADER, False)
    if referer_header is True:
        referer_header = stored.referer
    meta: dict[str, Any] = {
        "depth": stored.depth,
        META_ROUND: stored.round,
        _FROM_STATE: True,
    }
    if stored.referer is not None:
        meta[META_REFERER] = stored.referer
    if extra.pop(META_LINK_KIND, stored.kind) is not None:
        meta[META_LINK_KIND] = stored.kind
    meta.update(extra)
    # the stored URL is a Request's: already quoted, nearly always
    return safe_url_request(
        stored.url,
        method=stored.method,
        callback=getattr(spider, callback, None),
        errback=getattr(spider, errback, None),
        meta=meta,
        priority=stored.priority,
        headers={"Referer": referer_header} if referer_header else None,
    )
