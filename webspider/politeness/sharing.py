"""Whether this crawl's politeness is shared with other workers.

A crawl of one process keeps robots.txt, Crawl-delay turns and pauses in its
own memory; one whose crawl state is on Redis (``WEBSPIDER_STATE=redis://…``)
shares them with every worker of the crawl (webspider.politeness.shared).
redis-py is imported only then: it is an optional dependency.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from webspider.politeness.options import PolitenessOptions

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from webspider.politeness.shared import SharedPoliteness

_shared: weakref.WeakKeyDictionary[Crawler, SharedPoliteness | None] = (
    weakref.WeakKeyDictionary()
)


def shared_store(crawler: Crawler) -> SharedPoliteness | None:
    """The crawl's shared politeness (one per crawler, whichever component
    asks first), or None for a crawl of one process."""
    if crawler not in _shared:
        url = PolitenessOptions.of(crawler.settings).shared_url
        if url:
            from webspider.politeness.shared import SharedPoliteness  # noqa: PLC0415

            _shared[crawler] = SharedPoliteness(crawler, url)
        else:
            _shared[crawler] = None
    return _shared[crawler]
