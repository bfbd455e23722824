"""Write report files so that a reader never sees half of one."""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@contextmanager
def open_atomic(path: Path) -> Iterator[IO[str]]:
    """A text file that replaces ``path`` in one step when the block ends
    (temp file + rename), so a crawl killed mid-write leaves the previous
    complete version behind; on an error the temp file is removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            yield fh
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (see open_atomic)."""
    with open_atomic(path) as fh:
        fh.write(text)
