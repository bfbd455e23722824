"""Synthetic sites for the scale and kill/resume benchmarks.

``generate(root, pages, seed=…)`` writes a site of ``pages`` small HTML pages
(2-4 KB, 20-50 links each), the same bytes for the same arguments:

* page *i* is ``/p/<i // 1000>/<i>.html`` (a thousand files a folder, so a
  million pages do not make one huge directory); ``/`` links to page 0;
* every page links to the next one (so all are reachable), to pages just
  ahead of it (``window``) and, with probability ``spread`` per link, to any
  page of the site. A high ``spread`` makes breadth-first discovery queue
  most of the site early (the hard case for memory); a low one makes a deep
  site (many levels: rounds with a depth cap);
* the links mix the three forms real sites use: relative to the page
  (``12.html``), to a sibling folder (``../3/3012.html``) and root-relative;
* ``missing`` URLs that do not exist (404), ``/gone/<j>.html``, each linked
  from about three pages;
* ``duplicates`` pairs of pages with the same bytes: ``/dup/<k>.html``
  (linked from a page) and ``/dup/<k>-copy.html``, linked only from the
  first, so breadth-first order always meets the original first.

``<site folder>.json`` beside the site (not served) records what was
generated (and, with ``links=True``, every page's links, which the
kill/resume check uses to tell a right referer from a wrong one). A
``.complete`` marker makes the folder a cache: the same arguments reuse it.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

WORDS = tuple(
    [
        "crawl",
        "frontier",
        "state",
        "queue",
        "origin",
        "depth",
        "round",
        "lease",
        "commit",
        "mirror",
        "page",
        "link",
        "anchor",
        "report",
        "broken",
        "duplicate",
        "robots",
        "sitemap",
        "scope",
        "politeness",
        "seen",
        "fingerprint",
        "resume",
        "kill",
        "signal",
        "durable",
        "batch",
        "sqlite",
        "journal",
        "offset",
        "file",
    ]
)


def page_path(i: int) -> str:
    return f"/p/{i // 1000}/{i}.html"


def _href(src: int, dst: int, form: int) -> str:
    """The link from page ``src`` to page ``dst`` in one of three forms."""
    if form == 0 and dst // 1000 == src // 1000:
        return f"{dst}.html"
    if form < 2:
        return f"../{dst // 1000}/{dst}.html"
    return page_path(dst)


def site_dir(workdir: Path, pages: int, seed: int, spread: float) -> Path:
    return workdir / f"site-{pages}-seed{seed}-spread{spread:g}"


def generate(
    workdir: Path,
    pages: int,
    *,
    seed: int = 14,
    spread: float = 0.5,
    window: int = 200,
    missing: int = 300,
    duplicates: int = 5,
    links: bool = False,
) -> Path:
    """Write the site (once) under ``workdir``; its root folder."""
    root = site_dir(workdir, pages, seed, spread)
    if (root / ".complete").exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    rng = random.Random(seed)
    text = " ".join(rng.choice(WORDS) for _ in range(20_000))
    missing_links = min(3 * missing, pages)
    # which pages carry a link to a missing URL, and to which one
    gone = {
        src: j % missing
        for j, src in enumerate(rng.sample(range(pages), missing_links))
        if missing
    }
    dup_from = {rng.randrange(pages): k for k in range(duplicates)}
    graph: dict[str, list[str]] = {}
    (root / "index.html").write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Synthetic</title>'
        f'</head><body><a href="{page_path(0)}">start</a></body></html>\n'
    )
    graph["/"] = [page_path(0)]
    for i in range(pages):
        if i % 1000 == 0:
            (root / "p" / str(i // 1000)).mkdir(parents=True)
        count = rng.randint(20, 50)
        targets = [(i + 1) % pages]
        for _ in range(count - 1):
            if rng.random() < spread:
                targets.append(rng.randrange(pages))
            else:
                targets.append((i + rng.randint(1, window)) % pages)
        hrefs = [_href(i, t, rng.randrange(3)) for t in targets]
        linked = [page_path(t) for t in targets]
        if i in gone:
            hrefs.append(f"/gone/{gone[i]}.html")
            linked.append(hrefs[-1])
        if i in dup_from:
            hrefs.append(f"/dup/{dup_from[i]}.html")
            linked.append(hrefs[-1])
        size = rng.randint(2048, 4096)
        parts = [
            '<!DOCTYPE html><html><head><meta charset="utf-8">'
            f"<title>Page {i}</title></head><body><h1>Page {i}</h1><ul>\n"
        ]
        parts.extend(
            f'<li><a href="{h}">link {n}</a></li>\n' for n, h in enumerate(hrefs)
        )
        parts.append("</ul><p>")
        used = sum(map(len, parts)) + 20
        if used < size:
            start = rng.randrange(len(text) - 4096)
            parts.append(text[start : start + size - used])
        parts.append("</p></body></html>\n")
        (root / "p" / str(i // 1000) / f"{i}.html").write_text("".join(parts))
        if links:
            graph[page_path(i)] = linked
    if duplicates:
        (root / "dup").mkdir()
    for k in range(duplicates):
        body = (
            '<!DOCTYPE html><html><head><meta charset="utf-8">'
            f"<title>Twin {k}</title></head><body>"
            f'<a href="{k}-copy.html">the same page again</a></body></html>\n'
        )
        (root / "dup" / f"{k}.html").write_text(body)
        (root / "dup" / f"{k}-copy.html").write_text(body)
        graph[f"/dup/{k}.html"] = [f"/dup/{k}-copy.html"]
        graph[f"/dup/{k}-copy.html"] = [f"/dup/{k}-copy.html"]
    manifest = {
        "pages": pages,
        "seed": seed,
        "spread": spread,
        "window": window,
        "missing": missing,
        "duplicates": duplicates,
        # every URL the crawl can fetch with 2xx: /, the pages, the twins
        "documents": 1 + pages + 2 * duplicates,
    }
    if links:
        manifest["links"] = graph
    (root.parent / f"{root.name}.json").write_text(json.dumps(manifest))
    (root / ".complete").write_text("ok\n")
    return root


def manifest(root: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (root.parent / f"{root.name}.json").read_text()
    )
    return data
