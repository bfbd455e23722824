"""Check a mirror for offline browsing, and compare it with a wget mirror.

``python bench/check_mirror.py MIRROR_HOST_DIR [WGET_HOST_DIR]``

- every local reference (href, src, srcset, url(...), @import) in every
  mirrored HTML page and stylesheet resolves to a file in the mirror;
- with a wget mirror: every file wget saved is in the mirror (``?`` in
  wget's names is ``@`` in ours), and non-HTML files are byte-identical.

Exit status 1 when anything is missing or broken.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

from lxml import etree

ATTRS = ("href", "src", "poster", "data")
CSS_URL = re.compile(
    r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^\s"'()]+))\s*\)|@import\s+(?:"([^"]*)"|'([^']*)')"""
)


def references(path: Path) -> list[str]:
    data = path.read_bytes()
    if path.suffix.lower() == ".css":
        text = data.decode("utf-8", "replace")
        return [next(g for g in m.groups() if g) for m in CSS_URL.finditer(text)]
    root = etree.fromstring(data, etree.HTMLParser(recover=True))
    if root is None:
        return []
    refs: list[str] = []
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        if el.tag in {"a", "base"}:
            continue  # page links: checked below, separately
        for attr in ATTRS:
            value = el.get(attr)
            if value:
                refs.append(value)
        srcset = el.get("srcset")
        if srcset:
            refs += [c.split()[0] for c in srcset.split(",") if c.strip()]
        style = el.get("style")
        if style:
            refs += [next(g for g in m.groups() if g) for m in CSS_URL.finditer(style)]
        if el.tag == "style" and el.text:
            refs += [
                next(g for g in m.groups() if g) for m in CSS_URL.finditer(el.text)
            ]
    refs += [a.get("href") for a in root.iter("a") if a.get("href")]
    return refs


def local_target(page: Path, ref: str) -> Path | None:
    ref = ref.strip()
    parts = urlsplit(ref)
    if parts.scheme or parts.netloc or not parts.path:
        return None  # absolute (not mirrored) or same-page fragment
    return (page.parent / unquote(parts.path)).resolve()


def main() -> int:
    mirror = Path(sys.argv[1]).resolve()
    problems = 0
    pages = refs = 0
    for path in sorted(mirror.rglob("*")):
        if not path.is_file() or path.suffix.lower() not in (".html", ".htm", ".css"):
            continue
        pages += 1
        for ref in references(path):
            target = local_target(path, ref)
            if target is None:
                continue
            refs += 1
            if not target.is_file():
                problems += 1
                print(f"broken: {path.relative_to(mirror)}: {ref}")
    print(f"{pages} pages/stylesheets, {refs} local references, {problems} broken")
    if len(sys.argv) > 2:
        wget = Path(sys.argv[2]).resolve()
        files = same = 0
        for path in sorted(wget.rglob("*")):
            if not path.is_file():
                continue
            files += 1
            rel = str(path.relative_to(wget)).replace("?", "@")
            ours = mirror / rel
            if not ours.is_file():
                problems += 1
                print(f"missing: {rel}")
            elif path.suffix.lower() not in (".html", ".htm"):
                if ours.read_bytes() != path.read_bytes():
                    problems += 1
                    print(f"differs: {rel}")
                else:
                    same += 1
        print(f"wget saved {files} files; {same} non-HTML files byte-identical")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
