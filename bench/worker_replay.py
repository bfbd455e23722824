"""The page worker's work a page, without the crawl: record, then replay.

    python bench/worker_replay.py record --pages 4000 --out /tmp/frames  # one crawl
    python bench/worker_replay.py replay /tmp/frames.<pid>               # this tree
    PYTHONPATH=<other tree> python bench/worker_replay.py replay /tmp/frames.<pid>

``record`` crawls bench/smallpages.py's synthetic site once (``--project``'s
webspider, default features) with the page worker's input (every frame the
crawl sends it) copied to ``<out>.<worker pid>``: a ``sitecustomize`` on the
worker's PYTHONPATH (a temporary folder) puts a thread between its stdin
and the file. ``replay`` answers those frames again in this process
(``Worker.handle``, frame by frame, the mirror in a new temporary folder)
and prints the thread CPU a page of each message kind and of the parts of
the store: the same work as in the crawl, without the crawl, the pipes or
the other processes. ``os.open create`` is the temporary file's creation,
the kernel's part: it swings from ~20 µs to over 1 ms a file on this
machine's journal-less ext4 (bench/README.md, worker17). Run the two
trees' replays alternately: the machine's speed moves between minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

_TEE = """\
import os
if os.environ.get("WEBSPIDER_BENCH_RECORD"):
    with open("/proc/self/cmdline", "rb") as _f:
        _worker = b"webspider.pageworker.worker" in _f.read()
    if _worker:
        import threading
        _out = open(os.environ["WEBSPIDER_BENCH_RECORD"] + f".{os.getpid()}", "wb")
        _r, _w = os.pipe()
        _real = os.dup(0)
        os.dup2(_r, 0)
        os.close(_r)

        def _tee():
            while data := os.read(_real, 1 << 20):
                _out.write(data)
                view = memoryview(data)
                while view:
                    view = view[os.write(_w, view):]
            _out.close()
            os.close(_w)

        threading.Thread(target=_tee, daemon=True).start()
"""


def record(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(HERE))
    import contenders  # noqa: PLC0415
    import smallpages  # noqa: PLC0415

    with (
        tempfile.TemporaryDirectory(prefix="worker-replay-") as tmp,
        smallpages.synth_site(args.pages, args.workdir) as served,
    ):
        Path(tmp, "sitecustomize.py").write_text(_TEE)
        cmd = contenders.webspider(served.site.url, Path(tmp), args.project)
        env = {
            **cmd.env,
            "PYTHONPATH": f"{tmp}{os.pathsep}{cmd.env['PYTHONPATH']}",
            "WEBSPIDER_BENCH_RECORD": str(args.out),
        }
        with open(Path(tmp, "crawl.log"), "wb") as log:
            code = subprocess.call(
                cmd.argv, cwd=cmd.cwd, env=env, stdout=log, stderr=log
            )
    recorded = sorted(args.out.parent.glob(args.out.name + ".*"))
    print(f"crawl exited {code}; recorded: {', '.join(map(str, recorded))}")
    return code


def replay(args: argparse.Namespace) -> int:
    from webspider.mirror import safefs  # noqa: PLC0415
    from webspider.pageworker import worker  # noqa: PLC0415

    frames = worker.FrameReader().feed(args.frames.read_bytes())
    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)

    def timed(owner: Any, name: str, label: str) -> None:
        inner = getattr(owner, name)

        @functools.wraps(inner)
        def wrapper(*a: Any, **k: Any) -> Any:
            start = time.thread_time()
            try:
                return inner(*a, **k)
            finally:
                spent[label] += time.thread_time() - start
                calls[label] += 1

        setattr(owner, name, wrapper)

    timed(worker, "extract_page", "parse: extract_page")
    timed(worker, "page_to_json", "parse: page_to_json")
    timed(worker, "convert", "store: convert")
    timed(worker, "pack_restore", "store: pack_restore")
    if hasattr(worker.Worker, "plan"):  # the page's file planned (mirror17b)
        timed(worker.Worker, "plan", "parse: plan")
    timed(worker, "frame_head", "answers' JSON")
    timed(safefs.SafeTree, "write", "store: SafeTree.write")
    real_open = os.open

    def watched_open(path: Any, flags: int, *a: Any, **k: Any) -> int:
        start = time.thread_time()
        try:
            return real_open(path, flags, *a, **k)
        finally:
            label = "os.open create" if flags & os.O_CREAT else "os.open other"
            spent[label] += time.thread_time() - start
            calls[label] += 1

    with contextlib.ExitStack() as stack:
        root = stack.enter_context(tempfile.TemporaryDirectory(prefix="replay-"))
        for header, _ in frames:
            if header.get("op") == "init" and "mirror" in header:
                header["mirror"]["root"] = str(Path(root, "mirror"))
        os.open = watched_open  # type: ignore[assignment]
        stack.callback(setattr, os, "open", real_open)
        work = worker.Worker()
        for header, body in frames:
            op = header.get("op")
            if op == "stop":
                break
            start = time.thread_time()
            answer = work.handle(header, body)
            if answer is not None:
                worker.frame_head(*answer)
            spent[f"op {op}"] += time.thread_time() - start
            calls[f"op {op}"] += 1
        if work.tree is not None:
            work.tree.close()
    pages = calls["op parse"] or 1
    print(f"{args.frames}: {pages} pages, thread CPU a page")
    for label in sorted(spent):
        print(
            f"  {label:24} {calls[label]:7} calls {1e6 * spent[label] / pages:8.1f} µs"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="one crawl, the worker's input recorded")
    rec.add_argument("--pages", type=int, default=4000)
    rec.add_argument("--workdir", type=Path, default=Path("/tmp/webspider-scale"))
    rec.add_argument("--project", type=Path, default=HERE.parent)
    rec.add_argument("--out", type=Path, required=True)
    rep = sub.add_parser("replay", help="answer the recorded frames again")
    rep.add_argument("frames", type=Path)
    args = p.parse_args(argv)
    if args.command == "record":
        args.project = args.project.resolve()
        args.out = args.out.resolve()
        return record(args)
    if not args.frames.is_file():
        print(f"worker_replay: no file {args.frames}", file=sys.stderr)
        return 2
    return replay(args)


if __name__ == "__main__":
    sys.exit(main())
