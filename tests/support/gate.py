"""A spider module for start-up tests: holds the crawl's start at a known point.

``-s SPIDER_MODULES=webspider.spiders,tests.support.gate`` with the
environment variable ``TEST_START_GATE=/path/to/fifo``: when the crawl
command loads its spiders (while it checks its arguments, before Scrapy's
reactor runs and installs its signal handlers), importing this module opens
the FIFO for reading and reads it to its end. The test knows the crawl is
there when its own non-blocking open of the FIFO for writing succeeds. It
defines no spider.
"""

from __future__ import annotations

import os

GATE = os.environ.get("TEST_START_GATE")
if GATE:
    with open(GATE, encoding="utf-8") as gate:
        gate.read()
