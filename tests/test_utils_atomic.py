import errno
import os
import stat

import pytest

from webspider.utils import atomic
from webspider.utils.atomic import open_atomic, write_atomic


def test_a_write_that_fails_half_way_leaves_the_old_file(tmp_path):
    path = tmp_path / "deferred.jsonl"
    write_atomic(path, "old complete line\n")
    with pytest.raises(RuntimeError), open_atomic(path) as fh:
        fh.write("half of a new")
        raise RuntimeError("killed")
    assert path.read_text() == "old complete line\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deferred.jsonl"]


def test_a_first_write_that_fails_half_way_leaves_no_file(tmp_path):
    path = tmp_path / "summary.json"
    with pytest.raises(RuntimeError), open_atomic(path) as fh:
        fh.write('{"pages": ')
        raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_the_new_file_replaces_the_old_one_at_the_end(tmp_path):
    path = tmp_path / "sub" / "out.jsonl"
    with open_atomic(path) as fh:
        fh.write("a\n")
        assert not path.exists()  # not visible until complete
        fh.write("b\n")
    assert path.read_text() == "a\nb\n"


@pytest.fixture
def fsyncs(monkeypatch):
    """(is_folder, inode) of every fd fsynced, then the real fsync."""
    seen: list[tuple[bool, int]] = []
    real = os.fsync

    def fsync(fd):
        st = os.fstat(fd)
        seen.append((stat.S_ISDIR(st.st_mode), st.st_ino))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def test_the_file_is_fsynced_before_the_rename_and_the_folder_after(
    tmp_path, monkeypatch, fsyncs
):
    path = tmp_path / "summary.json"
    recorded = os.fsync
    visible: list[bool] = []

    def fsync(fd):
        visible.append(path.exists())
        recorded(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_atomic(path, "{}\n")
    # the temp file's inode is the final file's (renamed, not copied)
    assert fsyncs == [(False, path.stat().st_ino), (True, tmp_path.stat().st_ino)]
    assert visible == [False, True]


def test_a_failed_fsync_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "report.html"
    write_atomic(path, "old")

    def fsync(fd):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="I/O error"):
        write_atomic(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_a_folder_that_cannot_be_fsynced_is_skipped_quietly(tmp_path, monkeypatch):
    real = os.fsync

    def fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_atomic(tmp_path / "a.json", "{}")
    assert (tmp_path / "a.json").read_text() == "{}"


def test_without_folder_fsync_the_file_is_still_fsynced(tmp_path, monkeypatch, fsyncs):
    monkeypatch.delattr(atomic.os, "O_DIRECTORY", raising=False)
    write_atomic(tmp_path / "a.json", "{}")
    assert [is_folder for is_folder, _ in fsyncs] == [False]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_the_new_file_mode_follows_the_umask(tmp_path, umask):
    path = tmp_path / "summary.json"
    old = os.umask(umask)
    try:
        write_atomic(path, "{}")
        with open(tmp_path / "plain", "w") as fh:
            fh.write("{}")
    finally:
        os.umask(old)
    mode = stat.S_IMODE(path.stat().st_mode)
    assert mode == 0o666 & ~umask
    assert mode == stat.S_IMODE((tmp_path / "plain").stat().st_mode)
