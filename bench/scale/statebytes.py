"""Where the bytes of a crawl state go: per table and per records namespace.

    python bench/scale/statebytes.py OUTPUT/.webspider-state.sqlite3
    python bench/scale/statebytes.py STATE --urls 10011 --json

Reads a consistent snapshot (SQLite's backup API, into a temporary file), so
it can be run on the state of a crawl that is running. Prints the file's
pages (used, free), then per table and index what ``dbstat`` says (pages,
payload, unused bytes in used pages), per records namespace the rows and the
bytes of their keys and values, and the queue table's rows by status with
the bytes of their strings. ``--urls N`` divides by N (URLs seen).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

#: a done row is 0 from format 9, 3 before (neither is another status then)
STATUS = {0: "done", 1: "queued", 2: "leased", 3: "done", 4: "deferred"}


def snapshot(path: Path, into: Path) -> sqlite3.Connection:
    src = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    dst = sqlite3.connect(str(into))
    try:
        src.backup(dst)
    finally:
        src.close()
    return dst


def breakdown(path: Path) -> dict[str, Any]:
    files = {
        p.name: p.stat().st_size
        for p in path.parent.glob(path.name + "*")
        if p.is_file() and not p.name.endswith(".lock")
    }
    with tempfile.TemporaryDirectory() as tmp:
        db = snapshot(path, Path(tmp) / "copy.sqlite3")
        try:
            return _measure(db, files)
        finally:
            db.close()


def _measure(db: sqlite3.Connection, files: dict[str, int]) -> dict[str, Any]:
    (page_size,) = db.execute("PRAGMA page_size").fetchone()
    (pages,) = db.execute("PRAGMA page_count").fetchone()
    (free,) = db.execute("PRAGMA freelist_count").fetchone()
    (vacuum,) = db.execute("PRAGMA auto_vacuum").fetchone()
    tables = [
        {
            "name": name,
            "pages": n,
            "bytes": n * page_size,
            "payload": payload,
            "unused": unused,
        }
        for name, n, payload, unused in db.execute(
            "SELECT name, COUNT(*), SUM(payload), SUM(unused) FROM dbstat "
            "GROUP BY name ORDER BY COUNT(*) DESC"
        )
    ]
    namespaces: list[dict[str, Any]] = []
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    if "record" in names:
        namespaces = [
            {"name": name, "rows": rows, "key": k, "value": v}
            for name, rows, k, v in db.execute(
                "SELECT n.name, COUNT(*), SUM(LENGTH(CAST(r.key AS BLOB))), "
                "SUM(LENGTH(CAST(r.value AS BLOB))) FROM record r "
                "JOIN namespace n ON n.id = r.ns GROUP BY r.ns ORDER BY 4 DESC"
                if "ns" in {c[1] for c in db.execute("PRAGMA table_info(record)")}
                # format 3: the namespace is the key's first character (its
                # byte is not counted: the ns column was not either)
                else "SELECT n.name, COUNT(*), SUM(LENGTH(CAST(r.key AS BLOB)) - 1), "
                "SUM(LENGTH(CAST(r.value AS BLOB))) FROM record r "
                "JOIN namespace n ON n.id = unicode(r.key) GROUP BY n.id "
                "ORDER BY 4 DESC"
            )
        ]
    if "waiting" in names:  # format 6: links.waiting in a table of its own
        cols = {c[1] for c in db.execute("PRAGMA table_info(waiting)")}
        if "links" in cols:  # links packed in chunks by target
            links = keys = values = 0
            cleared = "cleared" if "cleared" in cols else "0"  # format 8
            ids = "waiting_text" in names  # format 10: texts kept once
            for target, first, data, bits in db.execute(
                f"SELECT target, first, links, {cleared} FROM waiting"
            ):
                links += _chunk_links(data, bits, ids)
                keys += len(target) + len(first)
                values += len(data)
            found = [(links, keys, values)] if links else []
        else:  # one row a link
            found = db.execute(
                "SELECT COUNT(*), SUM(LENGTH(CAST(target AS BLOB)) + "
                "LENGTH(CAST(page AS BLOB))), SUM(CASE typeof(value) WHEN "
                "'integer' THEN 0 ELSE LENGTH(CAST(value AS BLOB)) END) FROM waiting"
            ).fetchall()
        namespaces += [
            {"name": "links.waiting", "rows": rows, "key": k or 0, "value": v or 0}
            for rows, k, v in found
            if rows
        ]
    # format 9: the namespaces keyed by hashes, a table each
    for table in sorted(n for n in names if n.startswith("hashed_")):
        rows, k, v = db.execute(
            "SELECT COUNT(*), SUM(LENGTH(CAST(key AS BLOB))), "
            "SUM(CASE typeof(value) WHEN 'integer' THEN 0 "
            f"ELSE LENGTH(CAST(value AS BLOB)) END) FROM {table}"
        ).fetchone()
        if rows:
            namespaces.append({"name": table, "rows": rows, "key": k, "value": v})
    namespaces.sort(key=lambda n: -n["value"] - n["key"])
    queue = [
        {"status": STATUS.get(s, str(s)), "rows": rows, "key": k, "url": u, "extra": e}
        for s, rows, k, u, e in db.execute(
            "SELECT status, COUNT(*), SUM(LENGTH(key)), "
            "COALESCE(SUM(LENGTH(url)), 0), COALESCE(SUM(LENGTH(extra)), 0) "
            "FROM url GROUP BY status"
        )
    ]
    return {
        "files": files,
        "page_size": page_size,
        "pages": pages,
        "free_pages": free,
        "auto_vacuum": vacuum,
        "tables": tables,
        "namespaces": namespaces,
        "queue": queue,
    }


def _chunk_links(data: bytes, cleared: int = 0, ids: bool = False) -> int:
    """How many links a chunk of ``waiting`` holds (webspider.frontier.
    sqlitewaiting.SQLiteWaiting's layout; a link its ``cleared`` bits
    leave with no flag is not counted; ``ids``: format 10, an odd length
    is a text's id in ``waiting_text``)."""

    def varint(at: int) -> tuple[int, int]:
        n = shift = 0
        while True:
            byte = data[at]
            n |= (byte & 0x7F) << shift
            at += 1
            if byte < 0x80:
                return n, at
            shift += 7

    links = at = 0
    while at < len(data):
        head = data[at]
        at += 1
        if head & 16:
            size, at = varint(at)
            at += size
        else:
            at += 3
        size = head >> 5  # 0-5: the text's length, 6: no text, 7: longer
        if size == 6:
            size = 0
        elif size == 7:
            more, at = varint(at)
            if not ids:
                size = 6 + more
            elif more & 1:
                size = 0  # the text's id: kept once in waiting_text
            else:
                size = 6 + (more >> 1)
        at += size
        if head & 15 & ~cleared:
            links += 1
    return links


def render(data: dict[str, Any], urls: int | None) -> str:
    def per(n: int) -> str:
        return f"{n / urls:,.1f}" if urls else ""

    size = sum(data["files"].values())
    lines = [
        f"files: {', '.join(f'{k} {v:,}' for k, v in data['files'].items())} "
        f"= {size:,} B" + (f" ({per(size)} B/URL)" if urls else ""),
        f"pages: {data['pages']:,} of {data['page_size']} B, "
        f"{data['free_pages']:,} free ({per(data['free_pages'] * data['page_size'])}"
        f" B/URL); auto_vacuum={data['auto_vacuum']}",
        "",
        "| table or index | pages | bytes | B/URL | payload | unused |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for t in data["tables"]:
        lines.append(
            f"| {t['name']} | {t['pages']:,} | {t['bytes']:,} | {per(t['bytes'])} "
            f"| {t['payload']:,} | {t['unused']:,} |"
        )
    lines += [
        "",
        "| namespace | rows | key bytes | value bytes | (key+value) B/URL |",
        "|---|--:|--:|--:|--:|",
    ]
    for n in data["namespaces"]:
        lines.append(
            f"| {n['name']} | {n['rows']:,} | {n['key']:,} | {n['value']:,} "
            f"| {per(n['key'] + n['value'])} |"
        )
    lines += ["", "| url rows | rows | key | url | extra |", "|---|--:|--:|--:|--:|"]
    for q in data["queue"]:
        lines.append(
            f"| {q['status']} | {q['rows']:,} | {q['key']:,} | {q['url']:,} "
            f"| {q['extra']:,} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("state", type=Path)
    p.add_argument("--urls", type=int, help="divide by this many URLs")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if not args.state.is_file():
        print(f"statebytes: error: no such file: {args.state}", file=sys.stderr)
        return 2
    data = breakdown(args.state)
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        print(render(data, args.urls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
