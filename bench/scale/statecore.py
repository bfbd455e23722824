"""Benchmark (not a test): the crawl state's core alone, as a crawl drives it.

    PYTHONPATH=$PWD python bench/scale/statecore.py --pages 10000
    PYTHONPATH=$PWD python bench/scale/statecore.py --pages 100000 --json

Drives webspider.frontier.sqlite.SQLiteState (a fresh file in a temporary
folder, or ``--dir``) the way StateScheduler does on a synthetic site of
``--pages`` pages shaped like bench/scale/synth.py's (20-50 links a page,
half to pages just ahead, half to any page; seeded): lease 16 at a time,
ask the seen-set about each page's links at once (``contains_many``), queue
the new ones one by one (``add``, with the page as referer and its Referer
header's meta, as the spider's links are), acknowledge the page, and commit
with pages.jsonl's offset and the URLs-seen count every 32 acks. No
network, no Scrapy, no records: what the state's own tables and the SQLite
file cost.

Prints CPU ms per page (process time: the Python and SQLite work, not the
fsync waits), the same split into commit and the rest (and the CPU of
lease, contains_many and add, in that rest), the wall time of
the commits (the fsyncs), the bytes written a page (log frames and
checkpoints), the largest the files were (db + WAL) after a
commit, sampled every commit, and the file at the end, per URL.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import tempfile
import time
from pathlib import Path

from webspider.frontier.requestdata import REFERER_HEADER
from webspider.frontier.sqlite import SQLiteState
from webspider.frontier.state import StoredRequest

BASE = "http://127.0.0.1:50615"


def page_url(i: int) -> str:
    return f"{BASE}/p/{i // 1000}/{i}.html"


def links_of(i: int, pages: int, rng: random.Random) -> list[int]:
    n = rng.randint(20, 50)
    out = [min(i + 1, pages - 1)]
    for _ in range(n - 1):
        if rng.random() < 0.5:
            out.append(rng.randrange(pages))
        else:
            out.append(min(pages - 1, i + rng.randint(1, 60)))
    return out


def files_size(path: Path) -> tuple[int, int]:
    db = path.stat().st_size
    wal = path.with_name(path.name + "-wal")
    return db, wal.stat().st_size if wal.exists() else 0


def written() -> int:
    """Bytes this process has passed to write() and pwrite() (the log's
    frames and the checkpoints' copies into the file)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(pages: int, folder: Path, seed: int, records: int = 0) -> dict[str, float]:
    rng = random.Random(seed)
    path = folder / "state.sqlite3"
    state = SQLiteState(path, fresh=True)
    meta = {REFERER_HEADER: True}
    state.add([StoredRequest(key=page_url(0), url=page_url(0))])
    state.commit()
    done = commits = 0
    commit_cpu = commit_wall = 0.0
    peak = peak_wal = 0
    acks: list[int] = []
    started_cpu, started, started_written = cpu(), time.perf_counter(), written()
    clock = time.thread_time
    parts = dict.fromkeys(("lease", "contains_many", "add"), 0.0)
    while True:
        t = clock()
        leases = state.lease(16, deadline=time.time() + 600, strict=False)
        parts["lease"] += clock() - t
        if not leases:
            break
        for lease in leases:
            request = lease.request
            page = int(request.url.rsplit("/", 1)[1].split(".")[0])
            keys = [page_url(j) for j in links_of(page, pages, rng)]
            t = clock()
            answers = state.contains_many(keys)
            t2 = clock()
            parts["contains_many"] += t2 - t
            for key, seen in zip(keys, answers, strict=True):
                if not seen:
                    state.add(
                        [
                            StoredRequest(
                                key=key,
                                url=key,
                                depth=request.depth + 1,
                                referer=request.url,
                                meta=meta,
                            )
                        ]
                    )
            parts["add"] += clock() - t2
            if records:
                # what the features keep a page: records of its links
                state.records("bench.links").put_many(
                    (f"{key[-12:]}{page}", [page, "text"]) for key in keys[:records]
                )
            acks.append(lease.ticket)
            done += 1
            if len(acks) >= 32:
                c0, w0 = cpu(), time.perf_counter()
                state.set_offset("pages.jsonl", done * 3000)
                state.set_meta("urls_seen", str(len(state)))
                state.ack(acks)
                acks = []
                state.commit()
                commit_cpu += cpu() - c0
                commit_wall += time.perf_counter() - w0
                commits += 1
                db, wal = files_size(path)
                peak = max(peak, db + wal)
                peak_wal = max(peak_wal, wal)
    state.ack(acks)
    state.commit()
    total_cpu, wall = cpu() - started_cpu, time.perf_counter() - started
    wrote = written() - started_written
    urls = len(state)
    state.close()
    db, wal = files_size(path)
    return {
        "pages": done,
        "urls": urls,
        "commits": commits,
        "cpu_ms_page": round(1000 * total_cpu / done, 3),
        "commit_cpu_ms_page": round(1000 * commit_cpu / done, 3),
        "other_cpu_ms_page": round(1000 * (total_cpu - commit_cpu) / done, 3),
        **{
            f"{name}_cpu_ms_page": round(1000 * value / done, 3)
            for name, value in parts.items()
        },
        "commit_wall_ms": round(1000 * commit_wall / max(commits, 1), 2),
        "wall_s": round(wall, 1),
        "written_kb_page": round(wrote / done / 1024, 1),
        "peak_files_b_url": round(peak / urls),
        "peak_wal_b_url": round(peak_wal / urls),
        "end_b_url": round((db + wal) / urls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--dir", type=Path, help="folder for the state file")
    parser.add_argument(
        "--records",
        type=int,
        default=0,
        help="records written a page (keyed by link and page, as the reports'"
        " referrers are): commits of the size a mirrored crawl's are",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        result = run(args.pages, Path(tmp), args.seed, args.records)
    if args.json:
        print(json.dumps(result))
    else:
        for name, value in result.items():
            print(f"{name:>20} {value}")


if __name__ == "__main__":
    main()
