"""Benchmark (not a test): what the crawl state's commits write — the pages
in its write-ahead log, by table and by records' namespace.

    python bench/wal_pages.py [--pages 10000] [--mode nomirror] [--at 8,14,20,26]
        [--project P] [--workdir /tmp/webspider-speed]

Crawls bench/smallpages.py's synthetic site with ``--mode`` (``nomirror`` or
``webspider``), and at each of ``--at`` seconds stops the crawl (SIGSTOP),
copies the state file and its log, and lets it go on (SIGCONT). For each
copy: the log's frames (one a page a commit wrote; the log holds the
commits since the last checkpoint), how many commits, and whose page each
frame is: a table or index of the state (SQLite's ``dbstat``, read on the
copy without its log), and for the records' table the namespace of the
keys on that page (the first character of a record's key is its
namespace's id). A page the file did not have yet is ``new page``.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import smallpages  # noqa: E402

_LEAF, _INTERIOR = 0x0A, 0x02  # index B-tree pages (a WITHOUT ROWID table's)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = 0
    for n in range(9):
        byte = data[at]
        at += 1
        if n == 8:
            return (value << 8) | byte, at
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value, at


def _namespace(page: bytes) -> int | None:
    """The namespace id most of the page's records' keys begin with."""
    kind = page[0]
    if kind not in (_LEAF, _INTERIOR):
        return None
    header = 8 if kind == _LEAF else 12
    (cells,) = struct.unpack(">H", page[3:5])
    found: collections.Counter[int] = collections.Counter()
    for n in range(cells):
        (at,) = struct.unpack(">H", page[header + 2 * n : header + 2 * n + 2])
        try:
            at += 4 if kind == _INTERIOR else 0
            _, at = _varint(page, at)  # the payload's size
            record = at
            header_size, at = _varint(page, at)
            found[page[record + header_size]] += 1
        except IndexError:
            continue
    return found.most_common(1)[0][0] if found else None


def frames(state: Path) -> str:
    log = Path(f"{state}-wal").read_bytes()
    plain = state.with_name(state.name + ".plain")
    shutil.copy(state, plain)
    db = sqlite3.connect(f"file:{plain}?mode=ro", uri=True)
    names = dict(db.execute("SELECT id, name FROM namespace"))
    owner = {page: name for name, page in db.execute("SELECT name, pageno FROM dbstat")}
    db.close()
    (page_size,) = struct.unpack(">I", log[8:12])
    salt = log[16:24]
    by: collections.Counter[str] = collections.Counter()
    count = commits = 0
    at = 32
    while at + 24 + page_size <= len(log) and log[at + 8 : at + 16] == salt:
        number, size_after = struct.unpack(">II", log[at : at + 8])
        page = log[at + 24 : at + 24 + page_size]
        count += 1
        commits += size_after > 0
        table = owner.get(number)
        if table in ("record", None):
            ns = _namespace(page)
            if ns is None:
                by["new page" if table is None else "record, other"] += 1
            else:
                kind = "leaf" if page[0] == _LEAF else "interior"
                by[f"{names.get(ns, ns)} ({kind})"] += 1
        else:
            by[table] += 1
        at += 24 + page_size
    parts = ", ".join(f"{name} {n}" for name, n in by.most_common())
    return f"{count} frames, {commits} commits: {parts}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=10000)
    ap.add_argument("--mode", default="nomirror")
    ap.add_argument("--at", default="8,14,20,26")
    ap.add_argument("--project", type=Path, default=HERE.parent)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/webspider-speed"))
    args = ap.parse_args()
    args.before, args.variants, args.set, args.floor_set = None, {}, [], []
    with (
        smallpages.synth_site(args.pages, args.workdir) as served,
        tempfile.TemporaryDirectory(prefix="webspider-wal-") as tmp,
    ):
        cmd = smallpages.make_command(args.mode, served, Path(tmp), args)
        assert cmd is not None
        state = Path(tmp) / "out" / ".webspider-state.sqlite3"
        copies = Path(tmp) / "copies"
        copies.mkdir()
        proc = subprocess.Popen(
            cmd.argv, cwd=cmd.cwd, env=cmd.env or None,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        began = time.monotonic()
        taken = []
        for second in (float(s) for s in args.at.split(",")):
            time.sleep(max(0.0, began + second - time.monotonic()))
            if proc.poll() is not None:
                break
            os.kill(proc.pid, signal.SIGSTOP)
            try:
                copy = copies / f"at{second:g}s.sqlite3"
                shutil.copy(state, copy)
                shutil.copy(f"{state}-wal", f"{copy}-wal")
                taken.append((second, copy))
            finally:
                os.kill(proc.pid, signal.SIGCONT)
        proc.wait()
        for second, copy in taken:
            print(f"at {second:g} s: {frames(copy)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
