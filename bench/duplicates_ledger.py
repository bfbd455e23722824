"""CPU of the duplicate-content ledger per page, on the embedded crawl state.

    python bench/duplicates_ledger.py                       # this checkout
    python bench/duplicates_ledger.py --checkout before=/path/to/other --rounds 5

Feeds ``--pages`` pages (one in ``--every`` a duplicate of an earlier one)
through ``DuplicateContent.duplicate_of`` (webspider.reports.duplicates)
over a fresh SQLiteState, committing every 32 pages as a crawl does, and
prints the CPU time (``time.process_time``) per page; checkouts alternate
round by round, each in a process of its own (``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

ONE_RUN = r"""
import hashlib, json, sys, tempfile, time
from pathlib import Path
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from webspider import signals
from webspider.frontier.sqlite import SQLiteState
from webspider.reports.duplicates import DuplicateContent
from webspider.spiders.webspider import WebSpider

pages, every = int(sys.argv[1]), int(sys.argv[2])
crawler = get_crawler(WebSpider, {})
crawler.stats.open_spider()
ledger = build_from_crawler(DuplicateContent, crawler)
with tempfile.TemporaryDirectory() as tmp:
    state = SQLiteState(Path(tmp) / "state.sqlite3")
    crawler.signals.send_catch_log(signals.crawl_state_opened, records=state)
    work = []
    for i in range(pages):
        content = i - 1 if i % every == every - 1 else i
        url = f"http://site.test/dir/page-{i}.html"
        body = f"<html><p>{content}</p></html>".encode()
        work.append((HtmlResponse(url, body=body), hashlib.sha256(body).hexdigest()))
    started = time.process_time()
    for n, (response, digest) in enumerate(work, 1):
        ledger.duplicate_of(response, digest)
        if n % 32 == 0:
            state.commit()
    state.commit()
    spent = time.process_time() - started
    state.close()
print(json.dumps({"us_per_page": spent / pages * 1e6, "duplicates": ledger.count}))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", type=int, default=20_000)
    p.add_argument("--every", type=int, default=20, help="one duplicate in N")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--checkout", action="append", default=[], metavar="LABEL=PATH")
    args = p.parse_args()
    checkouts = {"this": HERE.parent}
    for item in args.checkout:
        label, _, path = item.partition("=")
        checkouts[label] = Path(path)
    figures: dict[str, list[float]] = {label: [] for label in checkouts}
    for rnd in range(args.rounds):
        order = list(checkouts.items())
        if rnd % 2:
            order.reverse()
        for label, path in order:
            out = subprocess.run(
                [sys.executable, "-c", ONE_RUN, str(args.pages), str(args.every)],
                env={**os.environ, "PYTHONPATH": str(path)},
                check=True,
                capture_output=True,
                text=True,
                cwd=tempfile.gettempdir(),
            ).stdout
            result = json.loads(out.splitlines()[-1])
            figures[label].append(result["us_per_page"])
            print(f"round {rnd + 1} {label:>8}: {result['us_per_page']:.1f} us/page "
                  f"({result['duplicates']} duplicates)", flush=True)  # fmt: skip
    for label, values in figures.items():
        print(f"{label:>8}: median {statistics.median(values):.1f} us/page "
              f"over {len(values)} rounds")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
