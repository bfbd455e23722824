"""The Referer of a page's links, worked out once per page and origin.

Scrapy's RefererMiddleware (``REFERRER_POLICY``; README "Hostile web")
chooses the policy and strips the page's URL for every request a page
yields: three ``urlparse`` and two ``strip_url`` a link, ~1.5 % of the
crawl process's CPU on small pages. The answer of Scrapy's own policies
depends on the page (its URL, its ``Referrer-Policy`` header) and on the
link's scheme and authority only, so this subclass keeps it per page
(while the page's output is processed) and per ``scheme://authority`` of
the link. A request naming its own ``referrer_policy`` in meta, a policy
class of someone else's (``REFERRER_POLICY``/``REFERRER_POLICIES`` may
name one that reads the whole URL) and start requests go through
Scrapy's code as before.
"""

from __future__ import annotations

import re
import weakref
from typing import TYPE_CHECKING

from scrapy.spidermiddlewares.referer import RefererMiddleware as ScrapyReferer

from webspider.spidermw import OutputFilter

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from scrapy.spidermiddlewares.referer import ReferrerPolicy

#: ``scheme://authority`` of a URL (what Scrapy's policies read of a link)
_ORIGIN_PART = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")
_SCRAPY_POLICIES = "scrapy.spidermiddlewares.referer"


class RefererMiddleware(OutputFilter, ScrapyReferer):
    """Scrapy's, with the referrer of a page's links kept per origin."""

    def __init__(self, settings: BaseSettings | None = None) -> None:
        super().__init__(settings)
        #: page -> its policy and {link's scheme://authority: Referer}
        self._pages: weakref.WeakKeyDictionary[
            Response, tuple[ReferrerPolicy, dict[str, str | None]]
        ] = weakref.WeakKeyDictionary()

    def get_processed_request(
        self, request: Request, response: Response | None
    ) -> Request | None:
        if response is None or "referrer_policy" in request.meta:
            return super().get_processed_request(request, response)
        url = request.url
        found = _ORIGIN_PART.match(url)
        if found is None:
            return super().get_processed_request(request, response)
        kept = self._pages.get(response)
        if kept is None:
            policy = self.policy(response, request)
            if type(policy).__module__ != _SCRAPY_POLICIES:
                return super().get_processed_request(request, response)
            kept = self._pages[response] = (policy, {})
        policy, referrers = kept
        key = found.group()
        try:
            referrer = referrers[key]
        except KeyError:
            referrer = referrers[key] = policy.referrer(response.url, url)
        if referrer is not None:
            request.headers.setdefault("Referer", referrer)
        return request
