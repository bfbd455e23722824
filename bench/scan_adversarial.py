"""The page scan on hostile shapes, against a plain page of the same size.

    PYTHONPATH=$PWD python bench/scan_adversarial.py [--size BYTES] [--runs N]

Each shape is one unit repeated to ``--size`` bytes (default 0.9 MB, the
size of the page in issue 15's finding 6). The scan is timed (process time,
the best of ``--runs``) as the crawl reads a page (``extract_page``: the fast
scan and the link collection) and as the reference loop reads it
(``scan(..., fast=False)``), each divided by the time of a plain page of
links and text of the same size. A linear scan keeps every ratio small and
the same at any size; a look-back over the page per tag shows as a ratio
that doubles when the size doubles, which is what the "x2 size" column
shows (the ratio at twice the size over the ratio at this size: about 1 is
linear, about 2 quadratic).

Nothing here is part of the test suite: tests/test_page_scan.py checks the
same shapes for results (the fast scan equals the reference), never time.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from webspider.page.links import LINK_RULES, extract_page
from webspider.page.scan import scan

URL = "http://site.test/dir/page.html"


def _numbered(unit: str) -> Callable[[int], bytes]:
    return lambda i: unit.replace("N", str(i)).encode()


#: name → one unit of the page (``N``: the unit's number)
SHAPES: dict[str, Callable[[int], bytes]] = {
    "plain": _numbered(
        '<p>Some text about N, <a href="/page/N.html">page N</a>.</p>\n'
    ),
    "meta refresh": _numbered('<meta http-equiv="refresh" content="0; url=/r/N">\n'),
    "meta refresh in noscript": _numbered(
        '<noscript><meta http-equiv=refresh content="0;url=/n/N"></noscript>\n'
    ),
    "noscript opened": _numbered("<noscript><meta http-equiv=refresh content=N>"),
    "meta name": _numbered('<meta name="robots" content="index, follow N">\n'),
    "base": _numbered('<base href="/b/N/">\n'),
    "comments": _numbered('<!-- N --><a href="/c/N">c</a>\n'),
    "comment openers": _numbered("<!-- <!-- N <!-"),
    "cdata": _numbered('<![CDATA[ <a href="/x/N"> ]]>\n'),
    "unterminated tags": _numbered("<a href=/u/N "),
    "unterminated quotes": _numbered("<a href=\"/q/N <a href='/q/N "),
    "stray equals": _numbered("<a = href=/s/N = "),
    "script openers": _numbered("<script>N "),
    "script close near-misses": _numbered("<script></scriptN </script"),
    "closed scripts": _numbered("<script>var a = '<a href=x>';</script>\n"),
    "style attributes": _numbered('<p style="background:url(/i/N.png)">x</p>\n'),
    "style words": _numbered("style N "),
    "style words after <": _numbered("< style N <b"),
    "css url openers": _numbered("<style>url(\"/s/N url('/t/N url(N "),
    "css comment openers": _numbered("<style>/* N url(/c/N) "),
    "css imports": _numbered("<style>@import 'N'; @import \"N"),
    "titles": _numbered("<title>N</title>"),
    "anchors without text end": _numbered('<a href="/t/N">text N '),
    "repeated attributes": _numbered("<a href=/h/N href=/g/N rel=x rel=nofollow>"),
    "character references": _numbered('<a href="/e/N?a=1&amp;b=&copy&#x4a;">e</a>'),
    "srcset": _numbered('<img srcset="/s/N.png 1x, /t/N.png 2x,,, ">'),
    "lone <": _numbered("< <a <a< <!- N"),
    "long tag": lambda i: (
        b"<a " + b"x=1 " * 250 + b'href="/l/' + str(i).encode() + b'">'
    ),
}


def page(shape: str, size: int) -> bytes:
    unit = SHAPES[shape]
    parts, total, i = [], 0, 0
    while total < size:
        part = unit(i)
        parts.append(part)
        total += len(part)
        i += 1
    return b"".join(parts)[:size]


def best(func: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        func()
        times.append(time.process_time() - start)
    return min(times)


def measure(body: bytes, runs: int) -> tuple[float, float]:
    fast = best(lambda: extract_page(body, URL, "utf-8"), runs)
    slow = best(lambda: scan(body, "utf-8", LINK_RULES, fast=False), runs)
    return fast, slow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size", type=int, default=900_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shapes", help="comma-separated names (default: all)")
    args = parser.parse_args()
    names = args.shapes.split(",") if args.shapes else list(SHAPES)
    size = args.size
    measure(page("plain", size), 1)  # warm up: caches, allocator
    plain = measure(page("plain", size), args.runs)
    plain2 = measure(page("plain", 2 * size), args.runs)
    print(
        f"plain page, {size:,} bytes: extract_page {plain[0]:.3f} s, "
        f"reference scan {plain[1]:.3f} s (process time, best of {args.runs})\n"
    )
    print(
        f"| shape ({size:,} bytes) | extract_page s | ratio | x2 size "
        "| reference s | ratio |"
    )
    print("|---|--:|--:|--:|--:|--:|")
    for name in names:
        fast, slow = measure(page(name, size), args.runs)
        fast2, _ = measure(page(name, 2 * size), args.runs)
        ratio = fast / plain[0]
        growth = (fast2 / plain2[0]) / ratio if ratio else float("nan")
        print(
            f"| {name} | {fast:.3f} | {ratio:.2f} | {growth:.2f} "
            f"| {slow:.3f} | {slow / plain[1]:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
