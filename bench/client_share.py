"""How much of a crawl process's samples the HTTP client takes, from py-spy.

    python bench/client_share.py bench/results/NAME-synth-floor.pyspy.txt \
        [--cpu-ms-per-page 0.77] [--top 20]

Reads py-spy's raw output (``bench/smallpages.py --profile-only`` writes it:
``frames count`` a line, outermost frame first) of the crawl's process
(the page worker's stacks, under a ``webspider.pageworker.worker`` frame,
are left out, as are threads waiting: smallpages' ``IDLE``), and charges a
sample to the HTTP client when **any** frame of its stack is the client's:
Scrapy's HTTP/1.1 handler and Twisted's web client and TCP transport under
it (``twisted/web/``, ``twisted/internet/tcp.py`` …; every Deferred
callback they run is under them), webspider's address-guard subclass and
its resolver, or the lean handler (bench/leanhttp.py, httptools and
asyncio's socket transport). This is inclusive where smallpages'
component table is exclusive (there a Deferred's callback or the event
loop's own frames go to "engine" although the client called them).

The handler's own calls into Scrapy (``make_response``: the response class
chosen, the Response built; the ``headers_received``/``bytes_received``
signals) are in the client's share but shown apart: a lean handler keeps
them. What the client's share does not hold: the asyncio task that awaits
the download (it resumes in the downloader, not under the client), the
epoll wait, and the imports of the client's modules at start-up.

``--cpu-ms-per-page``: the crawl process's CPU a page from unprofiled runs
of the same round (bench/smallpages.py's ``runs[]``); the µs column is
share times that.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from smallpages import _file, busy_samples

#: (substring of a frame's file, part of the client)
KEPT = "make_response, signals (kept by any handler)"
CLIENT: tuple[tuple[str, str], ...] = (
    ("leanhttp.py", "lean handler (bench/leanhttp.py)"),
    ("/httptools/", "lean handler (httptools)"),
    (
        "/scrapy/utils/_download_handlers.py",
        KEPT,
    ),
    ("/scrapy/http/", KEPT),
    ("/scrapy/responsetypes.py", KEPT),
    ("/scrapy/signalmanager.py", KEPT),
    ("/pydispatch/", KEPT),
    ("/scrapy/utils/signal.py", KEPT),
    (
        "/scrapy/core/downloader/handlers/http11.py",
        "http11 handler (_ScrapyAgent, reader)",
    ),
    ("/twisted/web/client.py", "twisted.web client (Agent, pool, Response)"),
    ("/twisted/web/_newclient.py", "twisted.web HTTP11ClientProtocol, parser"),
    ("/twisted/web/http_headers.py", "twisted.web Headers"),
    ("/twisted/web/", "twisted.web other"),
    ("/twisted/protocols/", "twisted LineReceiver, policies"),
    ("/twisted/internet/tcp.py", "twisted TCP transport"),
    ("/twisted/internet/abstract.py", "twisted TCP transport"),
    ("/twisted/internet/endpoints.py", "twisted TCP transport"),
    ("/twisted/internet/protocol.py", "twisted TCP transport"),
    ("/twisted/internet/defer.py", "Deferreds (under the client)"),
    ("/webspider/addresses/", "webspider address guard (handler, resolver)"),
    (
        "/asyncio/selector_events.py",
        "asyncio selector: add/remove a reader, writer; transport",
    ),
)
#: a stack is the client's when one of these frames is on it
ROOTS = (
    "leanhttp.py",
    "/scrapy/core/downloader/handlers/http11.py",
    "/twisted/web/",
    "/twisted/protocols/",
    "/twisted/internet/tcp.py",
    "/twisted/internet/abstract.py",
    "/twisted/internet/endpoints.py",
    "/webspider/addresses/handler.py",
    "/webspider/addresses/resolver.py",
    "_SelectorSocketTransport",
)


def part(path: str) -> str:
    for needle, name in CLIENT:
        if needle in path:
            return name
    return "other code the client called (stdlib, C)"


def analyse(raw: Path) -> tuple[int, int, Counter[str], Counter[str]]:
    """Samples of the crawl process, those of the client, the client's by
    part (innermost client frame) and by innermost frame."""
    total = client = 0
    parts: Counter[str] = Counter()
    inner: Counter[str] = Counter()
    for frames, count in busy_samples(raw):
        if any("webspider.pageworker.worker" in f for f in frames[:2]):
            continue
        total += count
        files = [_file(f) + " " + f for f in frames]
        if not any(r in f for f in files for r in ROOTS) or any(
            "<frozen importlib" in f for f in frames
        ):
            continue  # not the client's, or its modules imported at start-up
        client += count
        for path in reversed(files):
            name = part(path)
            if not name.startswith("other"):
                break
        parts[name] += count
        inner[frames[-1]] += count
    return total, client, parts, inner


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("raw", type=Path, nargs="+")
    p.add_argument("--cpu-ms-per-page", type=float, default=0.0)
    p.add_argument("--top", type=int, default=15)
    args = p.parse_args(argv)
    for raw in args.raw:
        total, client, parts, inner = analyse(raw)
        share = client / total if total else 0.0
        us = share * args.cpu_ms_per_page * 1000
        print(f"## {raw.name}: {client} of {total} samples in the client, {share:.1%}")
        if us:
            print(f"   x {args.cpu_ms_per_page} ms/page = {us:.0f} µs a request")
        print("| part (innermost client frame) | samples | share of the process |")
        print("|---|--:|--:|")
        for name, n in parts.most_common():
            print(f"| {name} | {n} | {n / total:.1%} |")
        print(f"\ninnermost frames (top {args.top}):")
        for frame, n in inner.most_common(args.top):
            print(f"  {n:6d} {n / total:6.1%}  {frame}")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
