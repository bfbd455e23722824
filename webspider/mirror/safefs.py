"""Write files named by strangers under one folder, and nowhere else.

``SafeTree(root).write(("site.test", "a", "b.html"), body)`` walks from the
root one folder at a time with directory file descriptors (``openat``
style): every component is opened with ``O_NOFOLLOW``, so a symbolic link
anywhere below the root — planted before the crawl or during it — is refused
(UnsafePathError), never followed; the file is written to a private
temporary file in its folder and renamed into place, so a failed write never
leaves a partial file under the final name and two writers never interleave.

On Linux (5.6 and later) a walk that finds every folder already there is
one system call: ``openat2`` from the root's fd with RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS, where the kernel itself refuses a symlink in any
component and any path out of the root; anything else (a folder to make, a
file or a link in the way, a kernel without openat2) walks one folder at a
time as above, which decides. And the temporary file is renamed with
``renameat2(RENAME_NOREPLACE)``: a name nothing holds (every file of a new
crawl) needs no look-up first; a name something holds is looked at then (a
regular file is replaced, a folder or a link is not).

File-vs-folder conflicts are resolved here, deterministically, losing
neither: a folder that finds a file in its place is created as
``<name>%~d``; a file that finds a folder is written as ``<name>%~f`` (before
an HTML extension). ``write`` returns the path actually used.

Pure filesystem code: no Scrapy, no URLs (see webspider.mirror.paths).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import itertools
import os
import re
import stat
import sys
from typing import TYPE_CHECKING, Any

from webspider.mirror.paths import NAME_MAX, conflict_name

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping
    from pathlib import Path

Segments = tuple[str, ...]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
#: how many times a name is re-suffixed before giving up (a hostile tree)
_MAX_CONFLICTS = 4
#: folders whose walk ``plan`` keeps (an open fd each), at most
PLANNED_FOLDERS = 64
TEMP_PREFIX = "%~tmp"
#: a separator or a control character (NUL included) in a name: one regex
#: search per segment rather than a Python test per character
_BAD_CHAR = re.compile(r"[/\\\x00-\x1f\x7f]")


class _OpenHow(ctypes.Structure):
    """openat2's ``struct open_how``."""

    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


#: openat2's number: the same on every Linux architecture (since 5.6)
_SYS_OPENAT2 = 437
#: RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH
_RESOLVE_SAFE = 0x02 | 0x04 | 0x08
_RENAME_NOREPLACE = 1
#: what says the call itself is missing or refused (an old kernel, a
#: seccomp filter, a file system without RENAME_NOREPLACE): not tried again
_UNSUPPORTED = frozenset((errno.ENOSYS, errno.EINVAL, errno.E2BIG, errno.EPERM))


class _LinuxCalls:
    """openat2 and renameat2 through the C library (the os module has
    neither); ``None`` where they are not there, and each turned off for the
    process at its first "not supported" answer."""

    def __init__(self) -> None:
        self.openat2: Any = None
        self.renameat2: Any = None
        if not sys.platform.startswith("linux"):
            return
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            syscall, renameat2 = libc.syscall, libc.renameat2
        except (OSError, AttributeError):
            return
        syscall.restype = ctypes.c_long
        syscall.argtypes = (
            ctypes.c_long,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
        )
        renameat2.restype = ctypes.c_int
        renameat2.argtypes = (
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_uint,
        )
        self.openat2, self.renameat2 = syscall, renameat2
        # one open_how for every folder: the flags never change
        self._how = _OpenHow(_DIR_FLAGS, 0, _RESOLVE_SAFE)
        self._how_ref = ctypes.addressof(self._how)
        self._how_size = ctypes.sizeof(self._how)

    def open_beneath(self, root_fd: int, path: bytes) -> int:
        """An fd of the folder ``path`` below ``root_fd``, reached through
        no symlink and never leaving it; -1 when it is not (then the walk
        decides)."""
        fd = int(
            self.openat2(_SYS_OPENAT2, root_fd, path, self._how_ref, self._how_size)
        )
        if fd < 0 and ctypes.get_errno() in _UNSUPPORTED:
            self.openat2 = None
        return fd

    def rename_new(self, fd: int, tmp: bytes, name: bytes) -> bool:
        """Rename ``tmp`` to ``name`` in ``fd`` if nothing holds ``name``;
        False when something does or the rename failed (then the caller
        looks and renames the usual way, which raises any error)."""
        if self.renameat2(fd, tmp, fd, name, _RENAME_NOREPLACE) == 0:
            return True
        if ctypes.get_errno() in _UNSUPPORTED:
            self.renameat2 = None
        return False


_LINUX = _LinuxCalls()


class UnsafePathError(OSError):
    """A path that would leave the tree, follow a symlink or touch a
    forbidden file."""


def refusal_json(exc: OSError) -> dict[str, Any]:
    """A refused write as the page worker sends it back: what
    ``refusal_error`` makes an error of again, its errno and file kept (a
    full disk stops the crawl, a refused path does not: webspider.storage)."""
    if isinstance(exc, UnsafePathError):
        return {"refused": str(exc), "unsafe": True}
    return {
        "refused": exc.strerror or str(exc),
        "unsafe": False,
        "errno": exc.errno,
        "filename": exc.filename,
    }


def refusal_error(data: Mapping[str, Any]) -> OSError:
    """The error ``refusal_json`` described."""
    error = str(data["refused"])
    if data.get("unsafe"):
        return UnsafePathError(error)
    if data.get("errno") is None:
        return OSError(error)
    return OSError(int(data["errno"]), error, data.get("filename"))


def check_segments(segments: Segments) -> None:
    """Refuse anything that is not a sequence of plain names."""
    if not segments:
        raise UnsafePathError("empty path")
    for seg in segments:
        if (
            not seg
            or seg in (".", "..")
            or _BAD_CHAR.search(seg) is not None
            or len(seg.encode("utf-8")) > NAME_MAX
            or seg.startswith(TEMP_PREFIX)
        ):
            raise UnsafePathError(f"unsafe path segment {seg!r}")


class SafeTree:
    """A folder that files are written into by relative path segments."""

    def __init__(self, root: Path, forbidden: Iterable[Segments] = ()) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        # The root itself is the user's choice (it may be a symlink); nothing
        # below it is followed.
        self._root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        #: paths (relative to the root) the tree never writes at or below:
        #: the crawl's own state when the user put it inside the mirror
        self.forbidden = tuple(forbidden)
        # The temporary files' names: a random tag of the tree's (os.urandom,
        # as secrets.token_hex: secrets would import hmac and with it OpenSSL,
        # webspider.utils.digests) and a count, not 8 random bytes a write (a
        # getrandom call each); O_EXCL refuses a name already there anyway
        self._tmp_tag = os.urandom(8).hex()
        self._tmp_count = itertools.count()
        #: folders ``plan`` walked to the end: the folders asked for → an fd
        #: of the folder reached and the names used (see ``plan``)
        self._planned: dict[Segments, tuple[int, Segments]] = {}

    def close(self) -> None:
        self.forget_plans()
        if self._root_fd >= 0:
            os.close(self._root_fd)
            self._root_fd = -1

    def forget_plans(self) -> None:
        """Walk every folder again at the next ``plan``: a write used
        another path than planned, or was refused (the tree changed)."""
        planned, self._planned = self._planned, {}
        for fd, _ in planned.values():
            os.close(fd)

    def remove_temporaries(self) -> int:
        """Delete the temporary files (``TEMP_PREFIX``) a write killed between
        creating and renaming left in the tree; how many. A walk of the whole
        tree (for a crawl that resumes after a stop, not for every one);
        symlinks are neither followed nor removed."""
        removed = 0
        for _, _, files, fd in os.fwalk(dir_fd=self._root_fd, follow_symlinks=False):
            for name in files:
                if name.startswith(TEMP_PREFIX):
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode):
                        os.unlink(name, dir_fd=fd)
                        removed += 1
        return removed

    def _check_forbidden(self, segments: Segments) -> None:
        for prefix in self.forbidden:
            if segments[: len(prefix)] == prefix:
                raise UnsafePathError(f"{'/'.join(segments)} is the crawl's own state")

    @contextlib.contextmanager
    def _folder(
        self, folders: Segments, create: bool
    ) -> Iterator[tuple[int, Segments]]:
        """An fd of the folder ``folders`` (walked without following links)
        and the names actually used (after folder-vs-file suffixes)."""
        fd, used = self._walk(folders, create)
        try:
            yield fd, used
        finally:
            if fd != self._root_fd:
                os.close(fd)

    def _walk(self, folders: Segments, create: bool) -> tuple[int, Segments]:
        """``_folder``'s fd (the root's own, not a copy, when ``folders`` is
        empty: close it only when it is not) and names. Folders that are all
        there: one ``openat2`` (the kernel refuses a link in any of them).
        Otherwise one folder at a time; the first opened in the root's fd
        itself: no ``dup`` and its ``close`` a write."""
        root = fd = self._root_fd
        if folders and _LINUX.openat2 is not None:
            found = _LINUX.open_beneath(root, os.fsencode("/".join(folders)))
            if found >= 0:
                return found, folders
        used: list[str] = []
        try:
            for folder in folders:
                new_fd, name = self._open_folder(fd, folder, used, create)
                if new_fd is None:
                    raise FileNotFoundError(f"no folder {'/'.join([*used, name])}")
                if fd != root:
                    os.close(fd)
                fd = new_fd
                used.append(name)
        except BaseException:
            if fd != root:
                os.close(fd)
            raise
        return fd, tuple(used)

    @staticmethod
    def _open_folder(
        fd: int, folder: str, used: list[str], create: bool
    ) -> tuple[int | None, str]:
        """An fd of the folder ``folder`` in ``fd`` (made when ``create``;
        None when it is not there), and the name used. Opened first: with
        O_NOFOLLOW | O_DIRECTORY the open itself refuses a link or a file in
        its place, so a folder that exists (every one but the first time)
        costs one system call, not a mkdir, a stat and an open."""
        name = folder
        for _ in range(_MAX_CONFLICTS):
            try:
                return os.open(name, _DIR_FLAGS, dir_fd=fd), name
            except FileNotFoundError:
                if not create:
                    return None, name
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=fd)
                try:
                    return os.open(name, _DIR_FLAGS, dir_fd=fd), name
                except OSError:
                    pass  # removed or replaced meanwhile: look again
            except OSError as exc:  # ELOOP/ENOTDIR: a link or a file is there
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed meanwhile: try again
                if stat.S_ISLNK(st.st_mode):
                    raise UnsafePathError(
                        f"symlink refused: {'/'.join([*used, name])}"
                    ) from exc
                if stat.S_ISDIR(st.st_mode):
                    # a folder that cannot be opened (permissions)
                    raise UnsafePathError(f"refused {name!r}: {exc}") from exc
                name = conflict_name(name, "d")
        raise UnsafePathError(f"too many name conflicts at {name!r}")

    def write(
        self, segments: Segments, data: bytes | memoryview | Iterable[bytes]
    ) -> Segments:
        """Write ``data`` (bytes or an iterable of chunks) at ``segments``
        atomically; returns the path used."""
        check_segments(segments)
        self._check_forbidden(segments)
        # (the walk, not ``_folder``'s context manager: once a page)
        fd, folders = self._walk(segments[:-1], create=True)
        try:
            # the name itself when nothing holds it (renamed without looking)
            used = (*folders, segments[-1])
            self._check_forbidden(used)
            # unguessable (the tree's random tag), and never the same twice
            tmp = f"{TEMP_PREFIX}{self._tmp_tag}{next(self._tmp_count):x}"
            out = os.open(tmp, _NEW_FILE_FLAGS, 0o644, dir_fd=fd)
            try:
                try:
                    chunks = (data,) if isinstance(data, (bytes, memoryview)) else data
                    for chunk in chunks:
                        view = memoryview(chunk)
                        while view:
                            view = view[os.write(out, view) :]
                finally:
                    os.close(out)
                if _LINUX.renameat2 is None or not _LINUX.rename_new(
                    fd, os.fsencode(tmp), os.fsencode(segments[-1])
                ):
                    # the name is held (or no renameat2): a regular file is
                    # replaced, a folder makes it suffixed, a link refuses it
                    name = self._file_name(fd, segments[-1], folders)
                    used = (*folders, name)
                    self._check_forbidden(used)
                    os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=fd)
                raise
        finally:
            if fd != self._root_fd:
                os.close(fd)
        return used

    def plan(self, segments: Segments) -> Segments:
        """The path ``write`` would use now (conflict suffixes applied),
        without creating anything.

        The walk to a folder that exists is kept (an fd of the folder and
        the names used, ``PLANNED_FOLDERS`` of them), so planning another
        file in it costs one system call, not five: a folder replaced after
        it was walked (by a symlink, a file, or removed) is not seen by the
        plans that follow, until ``forget_plans``. Only ``write`` decides
        where bytes go: it walks every folder again, never through a link,
        and the caller records the path it used (and forgets the plans when
        it differs, or when the write was refused)."""
        check_segments(segments)
        folders = segments[:-1]
        kept = self._planned.get(folders)
        if kept is not None:
            fd, used_folders = kept
            return (*used_folders, self._file_name(fd, segments[-1], used_folders))
        fd = os.dup(self._root_fd)
        used: list[str] = []
        try:
            for segment in folders:
                new_fd, name = self._open_folder(fd, segment, used, create=False)
                if new_fd is None:
                    # nothing here yet: the rest is created as named
                    return (*used, name, *segments[len(used) + 1 :])
                os.close(fd)
                fd = new_fd
                used.append(name)
            used_folders = tuple(used)
            planned = (*used_folders, self._file_name(fd, segments[-1], used_folders))
            if len(self._planned) >= PLANNED_FOLDERS:
                self.forget_plans()
            self._planned[folders] = (fd, used_folders)
            fd = -1
            return planned
        finally:
            if fd >= 0:
                os.close(fd)

    @staticmethod
    def _file_name(fd: int, name: str, folders: Segments) -> str:
        """The name the file ``name`` gets in the folder ``fd`` (``folders``),
        for ``write`` and ``plan`` alike: itself when free or a regular file
        (replaced), suffixed when anything else holds it (a folder), never
        through a symlink."""
        for _ in range(_MAX_CONFLICTS):
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return name
            if stat.S_ISREG(st.st_mode):
                return name
            if stat.S_ISLNK(st.st_mode):
                raise UnsafePathError(f"symlink refused: {'/'.join((*folders, name))}")
            name = conflict_name(name, "f")
        raise UnsafePathError(f"too many name conflicts at {name!r}")

    def read(self, segments: Segments) -> bytes | None:
        """The bytes of a regular file at ``segments``; None when it is not
        there (or is not a regular file)."""
        try:
            check_segments(segments)
            with self._folder(segments[:-1], create=False) as (fd, _):
                try:
                    f = os.open(segments[-1], _READ_FLAGS, dir_fd=fd)
                except OSError:
                    return None
                with os.fdopen(f, "rb") as fh:
                    if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                        return None
                    return fh.read()
        except (OSError, UnsafePathError):
            return None

    def exists(self, segments: Segments) -> bool:
        try:
            check_segments(segments)
            with self._folder(segments[:-1], create=False) as (fd, _):
                st = os.stat(segments[-1], dir_fd=fd, follow_symlinks=False)
                return stat.S_ISREG(st.st_mode)
        except OSError:
            return False
