"""Write whole files so that a reader never sees half of one, even after a
power cut.

Every file webspider rewrites whole goes through ``open_atomic``. Files
appended as a stream do not, nor do the mirror's pages, which
webspider.mirror.safefs writes without following symlinks.
"""

from __future__ import annotations

import errno
import os
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

#: what fsync of a folder raises where the file system cannot do it
_NO_DIR_FSYNC = (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF)


@contextmanager
def open_atomic(path: Path) -> Iterator[IO[str]]:
    """A text file that replaces ``path`` in one step when the block ends,
    so a crawl killed mid-write leaves the previous complete version behind;
    on an error the temp file is removed and ``path`` is untouched.

    The temp file is fsynced before the rename: without it a crash soon after
    can leave the new name pointing at an empty or partial file (ext4, XFS
    and btrfs may commit the rename before the data). The folder is fsynced
    after it, so the rename itself survives a crash. The file is created
    like any ``open(path, "w")``: its mode follows the umask."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_folder(path.parent)


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (see open_atomic)."""
    with open_atomic(path) as fh:
        fh.write(text)


def fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX). Windows cannot open a
    folder as a file (no O_DIRECTORY) and its renames need no folder flush;
    some file systems (network, FUSE) refuse fsync on a folder: the file is
    complete either way, only the rename may be lost in a crash, so both are
    skipped quietly."""
    flag = getattr(os, "O_DIRECTORY", None)
    if flag is None:
        return
    fd = os.open(folder, os.O_RDONLY | flag | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_DIR_FSYNC:
            raise
    finally:
        os.close(fd)
