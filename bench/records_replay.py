"""Benchmark (not a test): the CPU of the crawl state's records for a crawl's
pages, without the crawl (no network, no Scrapy, one process).

    PYTHONPATH=P python bench/records_replay.py [SITE] [--repeat N] [--every N]
        [--pragma NAME=VALUE ...]

SITE: a folder of HTML pages (default: the 4,000-page synthetic site
bench/smallpages.py generates, /tmp/webspider-speed/site-4000-seed14-spread0.5).
Its link graph is read once (``href`` values, joined), then fed breadth-first
to the records of a crawl state in a temporary file, as the crawl feeds them
for each page: the broken-link ledger (``good``, ``add_page``), the mirror's
lookups (``entry``, ``owner``, ``targets`` for the page's links), its writes
(``put`` with the links it keeps as written waiting for their targets:
those not mirrored yet), and every 32 pages (``--every``) the flushes and a
commit. Prints the CPU and wall seconds of that loop (best of ``--repeat``;
the wall includes the fsyncs) and the state's size: run it with P = two
checkouts, alternated, to compare them. ``--pragma cache_size=-16384`` (say)
sets an SQLite pragma on the state's connection once it is open.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from urllib.parse import urljoin

from webspider.frontier.sqlite import SQLiteState
from webspider.mirror.entry import Entry
from webspider.mirror.paths import url_path
from webspider.mirror.state import MirrorState
from webspider.reports.links import LinkLedger

_ARGV = sys.argv[1:]
REPEAT = int(_ARGV.pop(_ARGV.index("--repeat") + 1)) if "--repeat" in _ARGV else 3
EVERY = int(_ARGV.pop(_ARGV.index("--every") + 1)) if "--every" in _ARGV else 32
PRAGMAS = []
while "--pragma" in _ARGV:
    PRAGMAS.append(_ARGV.pop(_ARGV.index("--pragma") + 1))
    _ARGV.remove("--pragma")
_ARGS = [a for a in _ARGV if not a.startswith("--")]
SITE = Path(_ARGS[0] if _ARGS else "/tmp/webspider-speed/site-4000-seed14-spread0.5")
BASE = "http://127.0.0.1:8000/"
_HREF = re.compile(r'href="([^"]+)"')


def graph() -> tuple[list[str], dict[str, list[str]]]:
    links: dict[str, list[str]] = {}
    for path in SITE.rglob("*.html"):
        url = BASE + path.relative_to(SITE).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        links[url] = list(dict.fromkeys(urljoin(url, h) for h in _HREF.findall(text)))
    start = BASE + "index.html"
    order, seen, queue = [], {start}, deque([start])
    while queue:
        url = queue.popleft()
        order.append(url)
        for link in links.get(url, ()):
            if link in links and link not in seen:
                seen.add(link)
                queue.append(link)
    return order, links


def crawl(
    order: list[str], links: dict[str, list[str]], folder: Path
) -> tuple[float, float]:
    state = SQLiteState(folder / "state.sqlite3")
    for pragma in PRAGMAS:
        state._db.execute(f"PRAGMA {pragma}")
    ledger = LinkLedger(state)
    mirror = MirrorState(state, str(folder / "mirror"))
    mirrored: set[str] = set()
    started, wall = time.process_time(), time.perf_counter()
    for n, url in enumerate(order):
        page_links = links[url]
        ledger.good(url)
        ledger.add_page(url, [(link, "text", "a") for link in page_links])
        path = url_path(url)
        mirror.entry(url)
        mirror.owner(path)
        mirror.targets(page_links)
        entry = Entry(url=url, path=path, hash="0" * 64, size=3000, kind="html")
        waiting = [link for link in page_links if link not in mirrored]
        mirror.put(entry, plain=waiting, fresh=True)
        mirrored.add(url)
        if n % EVERY == EVERY - 1:
            ledger.flush()
            mirror.flush()
            state.commit()
    ledger.flush()
    mirror.flush()
    state.commit()
    cpu, wall = time.process_time() - started, time.perf_counter() - wall
    state.close()
    return cpu, wall


def main() -> None:
    order, links = graph()
    best = best_wall = None
    size = 0
    for _ in range(REPEAT):
        with tempfile.TemporaryDirectory() as tmp:
            cpu, wall = crawl(order, links, Path(tmp))
            size = sum(f.stat().st_size for f in Path(tmp).glob("state.sqlite3*"))
        best = cpu if best is None else min(best, cpu)
        best_wall = wall if best_wall is None else min(best_wall, wall)
    print(
        json.dumps(
            {
                "pages": len(order),
                "links": sum(len(links[u]) for u in order),
                "cpu_s_best": round(best or 0, 3),
                "cpu_ms_per_page": round(1000 * (best or 0) / len(order), 3),
                "wall_s_best": round(best_wall or 0, 3),
                "every": EVERY,
                "pragmas": PRAGMAS,
                "state_bytes": size,
            }
        )
    )


if __name__ == "__main__":
    main()
