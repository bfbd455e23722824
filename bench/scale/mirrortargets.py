"""The CPU of the mirror's reads of link targets, without a crawl (issue 14).

    PYTHONPATH=<tree> python bench/scale/mirrortargets.py          # this tree
    PYTHONPATH=/work/wt/before python bench/scale/mirrortargets.py before

``MirrorState.targets`` (where a page's links are mirrored: the index
records of its links, read for every page stored) over an embedded state
holding 10,000 index records, for 3,000 pages of 35 random links, half of
them to stored pages; the read caches emptied before each of five
passes. Prints the best pass's process CPU a page, and each pass's. The
records' encoding (JSON text, or packed lists in format 7:
webspider.frontier.packedlists) is what differs between trees.
"""

from __future__ import annotations

import hashlib
import random
import sys
import tempfile
import time
from pathlib import Path

from webspider.frontier.sqlite import SQLiteState
from webspider.mirror.entry import Entry, split
from webspider.mirror.state import MirrorState

BASE = "http://127.0.0.1:8080"
STORED = 10_000
PAGES = 3_000
LINKS = 35
PASSES = 5


def main() -> int:
    label = sys.argv[1] if len(sys.argv) > 1 else ""
    with tempfile.TemporaryDirectory(prefix="mirrortargets-") as tmp:
        state = SQLiteState(Path(tmp) / "state.sqlite3")
        mirror = MirrorState(state, str(Path(tmp) / "mirror"))
        for i in range(STORED):
            path = f"p/{i // 1000}/{i}.html"
            url = f"{BASE}/{path}"
            entry = Entry(
                url=url,
                path=split(f"127.0.0.1_8080/{path}"),
                hash=hashlib.sha256(url.encode()).hexdigest(),
                size=3000 + i,
                content_type="text/html",
                kind="html",
                encoding="utf-8",
                last_modified="Thu, 03 Dec 2026 10:00:00 GMT",
                converted=True,
                run=1,
            )
            mirror.put(entry, fresh=True)
        state.commit()
        rng = random.Random(3)
        pages = []
        for _ in range(PAGES):
            picks = [rng.randrange(2 * STORED) for _ in range(LINKS)]
            pages.append([f"{BASE}/p/{j // 1000}/{j}.html" for j in picks])
        passes = []
        for _ in range(PASSES):
            # cold: the index's and the records' memories emptied
            mirror.index = type(mirror.index)(
                state.records("mirror.index"), mirror.codes.sites, True
            )
            records = state.records("mirror.index")
            records._young.clear()  # type: ignore[union-attr]
            records._old.clear()  # type: ignore[union-attr]
            start = time.process_time()
            for links in pages:
                mirror.targets(links)
            passes.append((time.process_time() - start) / PAGES * 1e6)
        state.close()
    print(
        f"{label} targets: best {min(passes):.1f} µs a page "
        f"({', '.join(f'{p:.0f}' for p in passes)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
