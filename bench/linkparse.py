"""Link extraction engines on real HTML: webspider's scan vs lxml vs selectolax.

    python bench/linkparse.py [--root /usr/share/doc/python3.11/html] [--repeat 3]

For every .html file under --root: parse the bytes and collect the values of
the link attributes of LINK_RULES' elements (no URL joining: the engines are
compared, not webspider). Prints per-engine total and per-page times (best
of --repeat), whether the engines find the same links on every page, and
how each handles a set of broken documents. Also times webspider's own
extract_page (scan + joining + de-duplication + link texts) for reference.
The webspider engine is given UTF-8, as the others are given bytes; in a
crawl it gets the response's encoding (a UTF-16 page is re-encoded first).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from lxml import etree

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from webspider.page.links import LINK_RULES, extract_page  # noqa: E402
from webspider.page.scan import scan  # noqa: E402

try:
    from selectolax.lexbor import LexborHTMLParser
except ImportError:  # pip install -r bench/requirements.txt
    LexborHTMLParser = None

RULES: dict[str, tuple[str, ...]] = {}
for _rule in LINK_RULES:
    RULES.setdefault(_rule.tag, ())
    RULES[_rule.tag] += (_rule.attr,)
SELECTOR = ", ".join(sorted(RULES))

_LXML_PARSER = etree.HTMLParser(recover=True, no_network=True, collect_ids=False)


def links_lxml(body: bytes) -> list[str]:
    try:
        root = etree.fromstring(body, _LXML_PARSER)
    except (etree.ParserError, ValueError):
        return []
    if root is None:
        return []
    out = []
    for el in root.iter(*RULES):
        for attr in RULES[el.tag]:
            value = el.get(attr)
            if value:
                out.append(value)
    return out


def _links_selectolax(tree: object) -> list[str]:
    out = []
    for node in tree.css(SELECTOR):  # type: ignore[attr-defined]
        attrs = node.attributes
        for attr in RULES[node.tag]:
            value = attrs.get(attr)
            if value:
                out.append(value)
    return out


def links_lexbor(body: bytes) -> list[str]:
    return _links_selectolax(LexborHTMLParser(body))


def links_webspider(body: bytes) -> list[str]:
    # the link attributes only (the scan also reads CSS url()s: left out here)
    return [
        found[0]
        for found in scan(body, "utf-8", LINK_RULES).links
        if found[2] != "style"
    ]


def webspider_extract(body: bytes) -> list[str]:
    return [link.url for link in extract_page(body, "http://127.0.0.1/x/y.html").links]


ENGINES: dict[str, Callable[[bytes], list[str]]] = {
    "webspider htmlscan": links_webspider,
    "lxml": links_lxml,
}
if LexborHTMLParser is not None:
    ENGINES["selectolax-lexbor"] = links_lexbor

BROKEN: dict[str, bytes] = {
    "unclosed tags": b"<html><body><div><p><a href=a.html>a<a href=b.html>b<p>text",
    "unquoted attrs": b"<a href=a.html?x=1&y=2>a</a><img src=i.png alt=x>",
    "attr with newline": b'<a href="a\n.html">a</a><a href="\tb.html ">b</a>',
    "stray </html> first": b'</html><a href="a.html">a</a><body><a href="b.html">',
    "NUL bytes": b'<a href="a.html">a\x00</a>\x00<a href="b.html">b</a>',
    "binary garbage": bytes(range(256)) * 4 + b'<a href="a.html">a</a>',
    "latin-1 body, utf-8 meta": (
        '<meta charset="utf-8"><a href="caf\u00e9.html">caf\u00e9</a>'
        '<a href="b.html">b</a>'.encode("latin-1")
    ),
    "utf-16 BOM": '\ufeff<a href="a.html">a</a><a href="b.html">b</a>'.encode("utf-16"),
    "10,000 nested divs": b"<div>" * 10_000
    + b'<a href="a.html">a</a>'
    + b"</div>" * 10_000,
    "empty body": b"",
    "only whitespace": b"  \n\t ",
    "comment swallowing": b'<!-- <a href="no.html"> --><a href="a.html">a</a><!-->'
    b'<a href="b.html">b</a>',
    "script with tag text": b'<script>var s = "<a href=no.html>";</script>'
    b'<a href="a.html">a</a>',
    "unterminated attribute": b'<a href="a.html>a</a><a href="b.html">b</a>',
}


def time_engine(
    fn: Callable[[bytes], list[str]], bodies: list[bytes], repeat: int
) -> tuple[float, int]:
    best = float("inf")
    count = 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = 0
        for body in bodies:
            count += len(fn(body))
        best = min(best, time.perf_counter() - start)
    return best, count


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", type=Path, default=Path("/usr/share/doc/python3.11/html"))
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    files = sorted(args.root.rglob("*.html"))
    bodies = [f.read_bytes() for f in files]
    total_mb = sum(map(len, bodies)) / 1e6
    print(f"{len(bodies)} pages, {total_mb:.1f} MB of HTML under {args.root}\n")
    print(f"| engine | total s (best of {args.repeat}) | ms/page | links found |")
    print("| --- | ---: | ---: | ---: |")
    engines = dict(ENGINES)
    engines["webspider extract_page (scan + join + dedup)"] = webspider_extract
    for name, fn in engines.items():
        secs, count = time_engine(fn, bodies, args.repeat)
        print(f"| {name} | {secs:.3f} | {1000 * secs / len(bodies):.2f} | {count} |")
    differ = [
        (f, len(a), len(b))
        for f, body in zip(files, bodies, strict=True)
        if (a := links_lxml(body)) != (b := links_webspider(body))
    ]
    print(f"\npages where lxml and webspider link lists differ: {len(differ)}")
    for f, a, b in differ[:10]:
        print(f"  {f.relative_to(args.root)}: lxml {a}, webspider {b}")
    if "selectolax-lexbor" in ENGINES:
        differ = [
            (f, len(a), len(b))
            for f, body in zip(files, bodies, strict=True)
            if (a := links_lxml(body)) != (b := links_lexbor(body))
        ]
        print(f"\npages where lxml and lexbor link lists differ: {len(differ)}")
        for f, a, b in differ[:10]:
            print(f"  {f.relative_to(args.root)}: lxml {a}, lexbor {b}")
    print("\nbroken HTML: links found by each engine")
    print("| case | " + " | ".join(ENGINES) + " |")
    print("| --- |" + " --- |" * len(ENGINES))
    for case, body in BROKEN.items():
        cells = []
        for fn in ENGINES.values():
            try:
                cells.append(repr(fn(body))[:60])
            except Exception as exc:
                cells.append(f"raises {type(exc).__name__}")
        print(f"| {case} | " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")


if __name__ == "__main__":
    main()
