"""What compacting a finished crawl's state costs at N URLs.

    PYTHONPATH=$PWD python bench/scale/compaction.py 100000 300000

Builds a state of N done URLs (synthetic-site keys, shuffled) with six
namespaces of records per URL, as a mirrored crawl leaves them (the index's
compact record, ``mirror.where``, ``mirror.paths``, the duplicates' content
index, ``reports.link_states``, ``reports.pages``), sets the finished flag and
times ``SQLiteState.close()``: deleting the records and VACUUM.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

from webspider.frontier.sqlite import SQLiteState
from webspider.frontier.state import META_FINISHED

INDEX = (
    '{"s":3832,"t":"text/html","k":"html","e":"utf-8","g":"\\"6b0f41ad-ef8\\"",'
    '"m":1796161965,"c":1,"r":1,"b":"cEBifnyo9Y2aw0KIdUB7aVuv7qSKnZe9W7gHcsoxpU8"}'
)
RECORDS = (
    ("mirror.index", INDEX),
    ("mirror.where", "1"),
    ("mirror.paths", '"http://127.0.0.1:50615/p/0/1.html"'),
    ("reports.content", '"http://127.0.0.1:50615/p/5/5261.html"'),
    ("reports.link_states", "1"),
    ("reports.pages", "1"),
)


def files(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def measure(n: int, folder: Path) -> str:
    path = folder / f"state-{n}.sqlite3"
    state = SQLiteState(path, fresh=True)
    rng = random.Random(1)
    urls = [f"http://127.0.0.1:50615/p/{i // 1000}/{i}.html" for i in range(n)]
    rng.shuffle(urls)
    state._db.executemany(  # done rows, as the queue leaves them
        "INSERT INTO url (id, key, url, status, origin, depth, round, priority,"
        " kind, referer, seq, extra) VALUES (?, ?, NULL, 3, 1, 3, 0, 0, 0, NULL,"
        " ?, NULL)",
        ((rng.getrandbits(63), url, i) for i, url in enumerate(urls)),
    )
    for name, value in RECORDS:
        state._db.executemany(
            "INSERT INTO record (ns, key, value) VALUES (?, ?, ?)",
            ((state.records(name)._ns, url, value) for url in urls),
        )
    state.commit()
    before = files(path)
    state.set_meta(META_FINISHED, "1")
    started = time.perf_counter()
    state.close()
    took = time.perf_counter() - started
    return (
        f"{n:,} URLs: state {before / 2**20:.0f} MiB -> {files(path) / 2**20:.1f}"
        f" MiB, compaction {took:.1f} s"
    )


def main() -> int:
    sizes = [int(a) for a in sys.argv[1:]] or [100_000]
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            print(measure(n, Path(tmp)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
