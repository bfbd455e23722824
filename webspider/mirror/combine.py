"""One mirror from the mirrors of a shared crawl's workers.

Each worker of a crawl on Redis writes the files it fetched into its own
mirror folder, all of them under the same names (the URL→file mapping and the
collision checks read the shared index), and converts links against the
shared index: a link may lead to a file another worker wrote. The union of
the workers' trees is therefore the crawl's mirror, and what is left is to
choose between two copies of one name:

- copies with the same bytes are one file;
- a file never converted (an image, a PDF…) is the copy whose sha256 is the
  index's ``hash`` for its URL (an older fetch of a changed file is not);
- otherwise the newest copy (modification time): the fix-up of a page's links
  rewrites it after its first write, and a page fetched again after a
  worker's kill is newer than the killed worker's copy.

The copies chosen, the links are fixed up once more (webspider.mirror.fixup),
from the export of the shared index written last: a worker fixes up the
files it wrote when it stops, so a worker that stopped before another wrote
the files its pages link to (it left the crawl, was killed, or simply ended
first) left those links as written; over the combined mirror they lead to
their files, as in one process's crawl.

Every write of the mirror goes through a temporary name (``%~tmp…``) renamed
into place, so a file in a worker's folder is always complete; temporary
files a kill left behind are left out, and so are symlinks (the mirror never
writes one). Inputs are only read; the files are copied with their times.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from webspider.mirror.fixup import FixedUp, FixUp
from webspider.mirror.safefs import TEMP_PREFIX, SafeTree
from webspider.mirror.state import MirrorState
from webspider.records import MemoryRecordStore

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

logger = logging.getLogger(__name__)

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Indexed:
    """What the mirror's index says about a file name."""

    hash: str
    converted: bool


@dataclass
class MirrorCounts:
    files: int = 0
    #: names that more than one worker wrote
    shared: int = 0
    #: of those, names whose copies differed (one was chosen)
    differing: int = 0


def mirror_files(root: Path) -> Iterable[tuple[str, Path]]:
    """(relative name with ``/``, file) of every file under ``root``, in a
    stable order; symlinks and temporary files left out."""
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        base = Path(folder)
        for name in sorted(files):
            if name.startswith(TEMP_PREFIX):
                continue
            path = base / name
            if path.is_symlink() or not path.is_file():
                continue
            yield path.relative_to(root).as_posix(), path


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def choose(copies: list[Path], indexed: Indexed | None) -> tuple[Path, bool]:
    """The copy to keep, and whether the copies differed."""
    digests = {sha256_of(path): path for path in copies}
    if len(digests) == 1:
        return copies[0], False
    if indexed is not None and not indexed.converted:
        match = digests.get(indexed.hash)
        if match is not None:
            return match, True
    # newest first; between equal times, the first input
    newest = max(copies, key=lambda p: (p.stat().st_mtime_ns, -copies.index(p)))
    return newest, True


def combine_mirrors(
    roots: Iterable[Path], target: Path, index: Mapping[str, Indexed]
) -> MirrorCounts:
    """Copy the union of the mirrors under ``roots`` into ``target``.

    ``index``: the mirror's index by file name (may be empty)."""
    names: dict[str, list[Path]] = {}
    for root in roots:
        for name, path in mirror_files(root):
            names.setdefault(name, []).append(path)
    counts = MirrorCounts()
    for name in sorted(names):
        copies = names[name]
        source, differed = (
            choose(copies, index.get(name)) if len(copies) > 1 else (copies[0], False)
        )
        counts.files += 1
        counts.shared += len(copies) > 1
        counts.differing += differed
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest)
    return counts


def fix_up_combined(mirror: Path, export: Path) -> FixedUp:
    """Fix up the links of the combined ``mirror`` from ``export`` (its
    mirror-state.jsonl, naming it as its root), and write the export again
    with what is left pending."""
    state = MirrorState(MemoryRecordStore(), str(mirror.resolve()))
    info = state.import_file(export)
    state.run = int(info.get("run", 0))
    state.finished = bool(info.get("finished", False))

    def refused(url: str, error: Exception) -> None:
        logger.warning("Mirror: could not fix up %s: %s", url, error)

    tree = SafeTree(mirror)
    try:
        done = FixUp(state, tree, refused).run()
    finally:
        tree.close()
    state.export(export)
    return done
