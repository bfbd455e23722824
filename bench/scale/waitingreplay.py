"""The waiting links' bytes and CPU, replayed without a crawl (issue 14).

    python bench/scale/waitingreplay.py                 # 10,000 pages
    python bench/scale/waitingreplay.py --pages 4000 --layouts chunks
    python bench/scale/waitingreplay.py --texts target   # or unique

A crawl's pattern of ``links.waiting`` (webspider.utils.waitinglinks) on
a site of random links, breadth-first: page i, when fetched, flags its
links to the pages after it for the reports (a text, ``link N``, or with
``--texts`` the target's title or a text of its own) and the
mirror; every 50 pages the state commits, and the 50 targets fetched
meanwhile are settled (the mirror's bit cleared over each target's range,
then the reports'). Kept in the embedded state's two layouts: ``record``
(a row of the shared record table a link, format 5:
webspider.frontier.sqliterecords.SQLiteRecords) and ``chunks`` (a
target's links packed, format 6: SQLiteWaiting). Prints, at half the
pages, the links waiting, the table's bytes a link (dbstat: its pages,
their payload, their unused bytes, the pages' fill), and the process CPU
of the whole replay, and of its clearing (the ``unflag_prefixes`` calls)
apart. Run it from the tree to measure (``PYTHONPATH``); the script
itself runs on older trees.
"""

from __future__ import annotations

import argparse
import base64
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from webspider.frontier import sqliterecords

LINKS = 31
EVERY = 50


#: a link's text: its place in its page (the synthetic site's ``link N``), its
#: target's (a title: every page links to a page with the same text), or
#: its own (no text repeats)
TEXTS = {
    "place": lambda n, t, i: f"link {n}",
    "target": lambda n, t, i: f"Title of page number {t}",
    "unique": lambda n, t, i: f"link {n} of page {i}",
}


def replay(
    layout: str, pages: int, seed: int, folder: Path, texts: str = "place"
) -> str:
    text_of = TEXTS[texts]
    rng = random.Random(seed)
    codes = [base64.urlsafe_b64encode(rng.randbytes(3)).decode() for _ in range(pages)]
    links = [rng.sample(range(pages), LINKS) for _ in range(pages)]
    db = sqlite3.connect(folder / f"{layout}.sqlite3")
    db.execute("PRAGMA page_size=1024")
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(sqliterecords.SCHEMA)
    records = (
        sqliterecords.SQLiteWaiting(db, "links.waiting")
        if layout == "chunks"
        else sqliterecords.SQLiteRecords(db, "links.waiting")
    )
    table = "waiting" if layout == "chunks" else "record"
    start = time.process_time()
    clearing = 0.0
    found = ""
    for i in range(pages):
        records.flag_many(
            (codes[t] + "\n" + codes[i], 2, text_of(n, t, i))
            for n, t in enumerate(links[i])
            if t > i
        )
        records.flag_many(
            (codes[t] + "\n" + codes[i], 1, None) for t in links[i] if t > i
        )
        if i % EVERY == EVERY - 1:
            records.write_flags()
            settled = [codes[j] + "\n" for j in range(i - EVERY + 1, i + 1)]
            cleared = time.process_time()
            records.unflag_prefixes(settled, 1)
            records.unflag_prefixes(settled, 2)
            clearing += time.process_time() - cleared
            db.commit()
        if i == pages // 2:
            db.commit()
            n = records.count()
            size, payload, unused = db.execute(
                "SELECT SUM(pgsize), SUM(payload), SUM(unused) FROM dbstat "
                "WHERE name IN (?, 'waiting_text')",  # its texts (format 10)
                (table,),
            ).fetchone()
            found = (
                f"{n:,} links waiting at {i:,} pages: {size / n:.1f} B a link "
                f"(payload {payload / n:.1f}, unused {unused / n:.1f}, "
                f"fill {(size - unused) / size:.2f})"
            )
    db.commit()
    db.close()
    return (
        f"{layout:7} {found}; CPU {time.process_time() - start:.2f} s "
        f"(clearing {clearing:.2f})"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pages", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=14)
    p.add_argument("--layouts", default="record,chunks")
    p.add_argument("--texts", choices=sorted(TEXTS), default="place")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="waitingreplay-") as tmp:
        for layout in args.layouts.split(","):
            print(
                replay(layout, args.pages, args.seed, Path(tmp), args.texts), flush=True
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
