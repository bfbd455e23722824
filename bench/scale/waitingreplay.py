"""The waiting links' bytes and CPU, replayed without a crawl (issues 14, 17).

    python bench/scale/waitingreplay.py                 # 10,000 pages
    python bench/scale/waitingreplay.py --pages 4000 --layouts chunks
    python bench/scale/waitingreplay.py --texts target   # or unique
    python bench/scale/waitingreplay.py --graph synth --bits reports \\
        --layouts chunks,sorted,log,thread                # issue 17

A crawl's pattern of ``links.waiting`` (webspider.utils.waitinglinks) on
a site of links, breadth-first: page i, when fetched, flags its links to
the pages after it for the reports (a text, ``link N``, or with
``--texts`` the target's title or a text of its own) and, with ``--bits
both``, the mirror; every ``--every`` pages the state commits, and the
targets fetched meanwhile are settled (the mirror's bit cleared over each
target's range, then the reports'). ``--graph random``: 31 links a page
anywhere in the site (the replay of issue 14); ``synth``: the synthetic
site's (bench/scale/synth.py: 20-50 links, the next page, half of them
within 200 pages ahead, half anywhere).

Layouts:

- ``record``: a row of the shared record table a link (format 5:
  webspider.frontier.sqliterecords.SQLiteRecords);
- ``chunks``: a target's links packed (format 6-10: SQLiteWaiting), what
  the state keeps today;
- ``sorted``: the same, each commit's appends sorted by key first (their
  B-tree descents in order);
- ``log``: an append-only log, a row a referring page (its code, then its
  links: target code, a byte, the text inline or its id), settling writes
  nothing (the outcome is where the ledger keeps it already:
  ``reports.link_states``; here a set), and a sweep that rewrites the
  log's rows whose links are not all settled once the log holds more than
  ``--sweep`` times the links still waiting (its CPU counted on the loop);
  the referrers of a target are found by scanning the log (timed once at
  the peak: ``scan``);
- ``thread``: ``chunks`` in a file of its own, written by a thread (its
  own connection): each commit hands its rows and settled targets to the
  thread and waits for the thread's COMMIT before the main one (the order
  that keeps a kill -9 safe: extra rows, never missing ones).

Prints, per layout: the links flagged, the loop thread's CPU
(``time.thread_time``) a link — all of it, and of it the writes
(``write_flags``), the clearing, the COMMITs, the sweeps —, the other
thread's CPU a link (``thread``), the wall a link, and the table's peak
bytes (dbstat, every twentieth of the pages: the most bytes, and the links
waiting then) and at half the pages (pages, payload, unused, fill), the
shape of issue 14's figures. Run it from the tree to measure
(``PYTHONPATH``); ``record`` and ``chunks`` run on older trees.
"""

from __future__ import annotations

import argparse
import base64
import random
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path
from queue import Queue
from typing import Any

from webspider.frontier import sqliterecords, sqlitewaiting, waitingchunks

LINKS = 31

#: a link's text: its place in its page (the synthetic site's ``link N``), its
#: target's (a title: every page links to a page with the same text), or
#: its own (no text repeats)
TEXTS = {
    "place": lambda n, t, i: f"link {n}",
    "target": lambda n, t, i: f"Title of page number {t}",
    "unique": lambda n, t, i: f"link {n} of page {i}",
}

BITS = {"reports": (2,), "both": (2, 1)}


def graph(kind: str, pages: int, rng: random.Random) -> list[list[int]]:
    if kind == "random":
        return [rng.sample(range(pages), LINKS) for _ in range(pages)]
    out = []
    for i in range(pages):
        targets = [(i + 1) % pages]
        for _ in range(rng.randint(20, 50) - 1):
            if rng.random() < 0.5:
                targets.append(rng.randrange(pages))
            else:
                targets.append((i + rng.randint(1, 200)) % pages)
        out.append(targets)
    return out


def _table_bytes(db: sqlite3.Connection, tables: tuple[str, ...]) -> tuple[int, ...]:
    marks = ",".join("?" * len(tables))
    row = db.execute(
        "SELECT SUM(pgsize), SUM(payload), SUM(unused) FROM dbstat "
        f"WHERE name IN ({marks})",
        tables,
    ).fetchone()
    return tuple(int(v or 0) for v in row)


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False)
    db.execute("PRAGMA page_size=1024")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


class Log:
    """Layout ``log``: the links of a commit's pages appended, a row a page."""

    def __init__(self, db: sqlite3.Connection, sweep: float) -> None:
        self.db = db
        db.execute(
            "CREATE TABLE wlog (id INTEGER PRIMARY KEY, page BLOB NOT NULL, "
            "links BLOB NOT NULL)"
        )
        db.execute("CREATE TABLE wlog_text (id INTEGER PRIMARY KEY, text BLOB)")
        self.held: dict[bytes, bytearray] = {}
        self.ids: dict[str, int] = {}
        self.settled: set[bytes] = set()
        self.sweep = sweep
        self.logged = 0  # links in the log
        self.live = 0  # links whose target is not settled
        self.by_target: dict[bytes, int] = {}  # links logged a target, unsettled
        self.sweep_cpu = 0.0
        self.sweeps = 0

    def flag(self, target: bytes, page: bytes, bits: int, text: str | None) -> None:
        out = self.held.get(page)
        if out is None:
            out = self.held[page] = bytearray()
        out += target
        if text is None:
            out.append(bits | 6 << 5)
            return
        found = self.ids.get(text)
        if found is None:
            self.ids[text] = 0
        elif not found:
            found = self.ids[text] = self.db.execute(
                "INSERT INTO wlog_text (text) VALUES (?)", (text.encode(),)
            ).lastrowid
        if found:
            out.append(bits | 7 << 5)
            waitingchunks.put_varint(out, found << 1 | 1)
        else:
            raw = text.encode()
            if len(raw) < 6:
                out.append(bits | len(raw) << 5)
            else:
                out.append(bits | 7 << 5)
                waitingchunks.put_varint(out, len(raw) - 6 << 1)
            out += raw
        self.by_target[target] = self.by_target.get(target, 0) + 1
        self.logged += 1
        self.live += 1

    def write(self) -> None:
        held, self.held = self.held, {}
        self.db.executemany(
            "INSERT INTO wlog (page, links) VALUES (?, ?)",
            [(page, bytes(links)) for page, links in held.items()],
        )

    def settle(self, targets: list[bytes]) -> None:
        for target in targets:
            self.settled.add(target)
            self.live -= self.by_target.pop(target, 0)
        if self.logged > self.sweep * max(self.live, 1000):
            start = time.thread_time()
            self._sweep()
            self.sweep_cpu += time.thread_time() - start
            self.sweeps += 1

    def _sweep(self) -> None:
        """Rewrite the log's oldest rows (their links still waiting, at the
        end; most of the oldest rows' are settled) until it holds half way
        between ``sweep`` times and once the links still waiting."""
        goal = (1 + self.sweep) / 2 * self.live
        (last,) = self.db.execute("SELECT max(id) FROM wlog").fetchone()
        at = 0
        settled = self.settled
        while self.logged > goal and at < last:
            rows = self.db.execute(
                "SELECT id, page, links FROM wlog WHERE id > ? AND id <= ? "
                "ORDER BY id LIMIT 256",
                (at, last),
            ).fetchall()
            if not rows:
                break
            kept = []
            for _id, page, data in rows:
                out, _n, dropped = _keep(data, settled)
                self.logged -= dropped
                if out:
                    kept.append((page, out))
            self.db.execute(
                "DELETE FROM wlog WHERE id > ? AND id <= ?", (at, rows[-1][0])
            )
            at = rows[-1][0]
            self.db.executemany("INSERT INTO wlog (page, links) VALUES (?, ?)", kept)

    def scan(self, targets: set[bytes]) -> int:
        """The referrers of ``targets``: one pass over the log."""
        found = 0
        for (data,) in self.db.execute("SELECT links FROM wlog"):
            found += _find(data, targets)
        return found


def _skip(data: bytes, at: int) -> int:
    """The end of a log link's text that begins at ``at`` (after the byte)."""
    size = data[at - 1] >> 5
    if size == 7:
        more, at = waitingchunks.read_varint(data, at)
        if not more & 1:
            at += 6 + (more >> 1)
        return at
    return at + (0 if size == 6 else size)


def _keep(data: bytes, settled: set[bytes]) -> tuple[bytes, int, int]:
    out = bytearray()
    at, end, n, dropped = 0, len(data), 0, 0
    while at < end:
        start = at
        target = data[at : at + 3]
        at = _skip(data, at + 4)
        if target not in settled:
            out += data[start:at]
            n += 1
        else:
            dropped += 1
    return bytes(out), n, dropped


def _find(data: bytes, targets: set[bytes]) -> int:
    at, end, n = 0, len(data), 0
    while at < end:
        if data[at : at + 3] in targets:
            n += 1
        at = _skip(data, at + 4)
    return n


def _worker(tasks: Queue[Any], path: Path, out: dict[str, float]) -> None:
    """Layout ``thread``: the chunks written on a connection of its own."""
    db = _open(path)
    db.executescript(sqliterecords.SCHEMA)
    records = sqlitewaiting.SQLiteWaiting(db, "links.waiting")
    while True:
        task = tasks.get()
        if task is None:
            break
        rows, settled, done = task
        if rows == "measure":
            paused = time.thread_time()
            done.append(_table_bytes(db, ("waiting", "waiting_text")))
            done.append(records.count())
            out["measure"] = out.get("measure", 0.0) + time.thread_time() - paused
            settled.set()
            continue
        records._flags = rows
        records.write_flags()
        for bits in (1, 2):
            records.unflag_prefixes(settled, bits)
        db.commit()
        done.set()
    out["cpu"] = time.thread_time() - out.get("measure", 0.0)
    db.close()


def replay(  # noqa: PLR0917
    layout: str,
    pages: int,
    seed: int,
    folder: Path,
    texts: str = "place",
    kind: str = "random",
    bits: str = "both",
    every: int = 50,
    sweep: float = 1.5,
    write_behind: bool = False,
) -> str:
    text_of = TEXTS[texts]
    flags = BITS[bits]
    rng = random.Random(seed)
    codes = [base64.urlsafe_b64encode(rng.randbytes(3)).decode() for _ in range(pages)]
    links = graph(kind, pages, rng)
    db = _open(Path(tempfile.mkdtemp(dir=folder)) / f"{layout}.sqlite3")
    db.executescript(sqliterecords.SCHEMA)
    records: Any = None
    log: Log | None = None
    tasks: Queue[Any] | None = None
    worker_out: dict[str, float] = {}
    worker = None
    if layout in ("chunks", "sorted"):
        records = sqlitewaiting.SQLiteWaiting(db, "links.waiting")
        tables: tuple[str, ...] = ("waiting", "waiting_text")
    elif layout == "record":
        records = sqliterecords.SQLiteRecords(db, "links.waiting")
        tables = ("record",)
    elif layout == "log":
        log = Log(db, sweep)
        packed = [waitingchunks.pack_code(code) for code in codes]
        tables = ("wlog", "wlog_text")
    elif layout == "thread":
        tasks = Queue()
        worker = threading.Thread(
            target=_worker,
            args=(
                tasks,
                Path(tempfile.mkdtemp(dir=folder)) / "side.sqlite3",
                worker_out,
            ),
        )
        worker.start()
        held: dict[str, list[Any]] = {}
        tables = ()
    else:
        raise SystemExit(f"no layout {layout!r}")

    def measure() -> tuple[tuple[int, ...], int]:
        if tasks is not None:
            done: list[Any] = []
            ready = threading.Event()
            tasks.put(("measure", ready, done))
            ready.wait()
            return done[0], done[1]
        db.commit()
        n = log.live if log is not None else records.count()
        return _table_bytes(db, tables), n

    wall = time.perf_counter()
    start = time.thread_time()
    writing = clearing = committing = 0.0
    flagged = 0
    peak = (0, 0)
    half = ""
    step = max(pages // 20, every)

    def flag_page(i: int, mine: list[tuple[int, int]]) -> int:
        if log is not None:
            page = packed[i]
            union = sum(flags)  # a link's bits in one entry
            done_t: set[int] = set()
            for n, t in mine:
                if t not in done_t:  # a page's first link to a target
                    done_t.add(t)
                    log.flag(packed[t], page, union, text_of(n, t, i))
            return len(done_t)
        into = records._flags if records is not None else held
        for bit in flags:
            for n, t in mine:
                key = codes[t] + "\n" + codes[i]
                text = text_of(n, t, i) if bit == 2 else None
                row = into.get(key)
                if row is None:
                    into[key] = [bit, text]
                else:
                    row[0] |= bit
                    if text is not None:
                        row[1] = text
        return len({t for _, t in mine})

    #: the pages of the commit, their links not flagged yet (write_behind)
    batch: list[tuple[int, list[tuple[int, int]]]] = []
    for i in range(pages):
        mine = [(n, t) for n, t in enumerate(links[i]) if t > i]
        if write_behind:
            # the ledger's flush: a link whose target was fetched before the
            # commit is not written (webspider.reports.links, "Write-behind")
            batch.append((i, mine))
            if i % every == every - 1:
                for j, theirs in batch:
                    flagged += flag_page(j, [(n, t) for n, t in theirs if t > i])
                batch = []
        else:
            flagged += flag_page(i, mine)
        if i % every == every - 1:
            t0 = time.thread_time()
            settled = [codes[j] + "\n" for j in range(i - every + 1, i + 1)]
            if layout == "thread":
                done = threading.Event()
                assert tasks is not None
                tasks.put((held, settled, done))
                held = {}
                done.wait()  # its COMMIT before the state's
                t1 = time.thread_time()
                writing += t1 - t0
            elif log is not None:
                log.write()
                t1 = time.thread_time()
                writing += t1 - t0
                log.settle([packed[j] for j in range(i - every + 1, i + 1)])
                clearing += time.thread_time() - t1
            else:
                if layout == "sorted":
                    records._flags = dict(sorted(records._flags.items()))
                records.write_flags()
                t1 = time.thread_time()
                writing += t1 - t0
                for bit in (1, 2):
                    records.unflag_prefixes(settled, bit)
                clearing += time.thread_time() - t1
            t2 = time.thread_time()
            db.commit()
            committing += time.thread_time() - t2
        if i % step == step - 1 or i == pages // 2:
            paused = time.thread_time()
            paused_wall = time.perf_counter()
            (size, payload, unused), n = measure()
            if size > peak[0]:
                peak = (size, n)
            if i == pages // 2:
                half = (
                    f"at {i:,} pages {n:,} waiting: {size / n:.1f} B a link "
                    f"(payload {payload / n:.1f}, unused {unused / n:.1f}, "
                    f"fill {(size - unused) / size:.2f})"
                )
                if log is not None:
                    s0 = time.perf_counter()
                    found = log.scan({packed[t] for t in range(i, i + 300)})
                    half += (
                        f"; a scan for 300 targets' {found:,} referrers "
                        f"{time.perf_counter() - s0:.3f} s"
                    )
            start += time.thread_time() - paused
            wall += time.perf_counter() - paused_wall
    t2 = time.thread_time()
    db.commit()
    committing += time.thread_time() - t2
    cpu = time.thread_time() - start
    wall = time.perf_counter() - wall
    other = ""
    if tasks is not None:
        tasks.put(None)
        assert worker is not None
        worker.join()
        other = f", thread {worker_out['cpu'] / flagged * 1e6:.2f}"
    if log is not None:
        other = f", sweeps {log.sweep_cpu / flagged * 1e6:.2f} ({log.sweeps} of them)"
    db.close()
    per = 1e6 / flagged
    return (
        f"{layout:7} {flagged:,} links: loop {cpu * per:.2f} us a link (writes "
        f"{writing * per:.2f}, clearing {clearing * per:.2f}, COMMITs "
        f"{committing * per:.2f}{other}), wall {wall * per:.2f}; peak "
        f"{peak[0]:,} B ({peak[1]:,} waiting then); {half}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pages", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=14)
    p.add_argument("--layouts", default="record,chunks")
    p.add_argument("--texts", choices=sorted(TEXTS), default="place")
    p.add_argument("--graph", choices=("random", "synth"), default="random")
    p.add_argument("--bits", choices=sorted(BITS), default="both")
    p.add_argument("--every", type=int, default=50, help="pages a commit")
    p.add_argument("--sweep", type=float, default=1.5)
    p.add_argument(
        "--chunk-bytes",
        type=int,
        default=sqlitewaiting.CHUNK_BYTES,
        help="where a chunk is split (sqlitewaiting.CHUNK_BYTES)",
    )
    p.add_argument(
        "--write-behind",
        action="store_true",
        help="links held until the commit, those to pages fetched by then dropped",
    )
    args = p.parse_args(argv)
    sqlitewaiting.CHUNK_BYTES = args.chunk_bytes
    with tempfile.TemporaryDirectory(prefix="waitingreplay-") as tmp:
        for layout in args.layouts.split(","):
            line = replay(
                layout,
                args.pages,
                args.seed,
                Path(tmp),
                args.texts,
                args.graph,
                args.bits,
                args.every,
                args.sweep,
                args.write_behind,
            )
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
