import os
import sys

import pytest

from webspider.mirror import safefs
from webspider.mirror.safefs import (
    TEMP_PREFIX,
    SafeTree,
    UnsafePathError,
    check_segments,
)


@pytest.fixture(params=["linux", "portable"])
def tree(request, tmp_path, monkeypatch):
    """A tree whose walks and renames use openat2 and renameat2 where the
    kernel has them ("linux"), and one that walks a folder at a time and
    looks before it renames ("portable", as without them): every test of
    the tree runs both ways."""
    if request.param == "portable":
        monkeypatch.setattr(safefs._LINUX, "openat2", None)
        monkeypatch.setattr(safefs._LINUX, "renameat2", None)
    t = SafeTree(tmp_path / "mirror")
    yield t
    t.close()


def _kernel_at_least(major, minor):
    release = os.uname().release.split(".")
    try:
        return (int(release[0]), int(release[1].split("-")[0])) >= (major, minor)
    except (IndexError, ValueError):
        return False


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not _kernel_at_least(5, 6),
    reason="openat2 is Linux 5.6's",
)
def test_the_linux_calls_are_there_and_used(tmp_path):
    """On a Linux that has openat2 the fast walk is taken (not silently
    turned off by a first "not supported")."""
    # a container's seccomp filter may refuse both calls (EPERM, ENOSYS):
    # asked directly, with fresh wrappers, so that only the environment
    # skips this test, never the module turning them off by mistake
    probe = safefs._LinuxCalls()
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        (tmp_path / "probe").write_bytes(b"")
        opened = probe.open_beneath(fd, b".")
        if opened >= 0:
            os.close(opened)
        renamed = probe.rename_new(fd, b"probe", b"probed")
    finally:
        os.close(fd)
    if probe.openat2 is None or probe.renameat2 is None:
        pytest.skip("openat2 or renameat2 refused here (a seccomp filter?)")
    assert opened >= 0 and renamed
    tree = SafeTree(tmp_path / "m")
    tree.write(("h", "a", "1.html"), b"1")
    assert tree.write(("h", "a", "2.html"), b"2") == ("h", "a", "2.html")
    assert tree.write(("h", "a", "2.html"), b"3") == ("h", "a", "2.html")
    tree.close()
    assert safefs._LINUX.openat2 is not None
    assert safefs._LINUX.renameat2 is not None
    assert (tmp_path / "m/h/a/2.html").read_bytes() == b"3"


def files_under(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if not p.is_dir())


def test_write_and_read(tree, tmp_path):
    assert tree.write(("h", "a", "b.html"), b"hello") == ("h", "a", "b.html")
    assert (tmp_path / "mirror/h/a/b.html").read_bytes() == b"hello"
    assert tree.read(("h", "a", "b.html")) == b"hello"
    assert tree.exists(("h", "a", "b.html"))
    assert tree.read(("h", "nope")) is None


def test_write_chunks(tree, tmp_path):
    tree.write(("h", "big"), iter([b"a" * 100_000, b"b" * 100_000]))
    assert (tmp_path / "mirror/h/big").read_bytes() == b"a" * 100_000 + b"b" * 100_000


@pytest.mark.parametrize(
    "segments",
    [
        (),
        ("..", "x"),
        ("h", ".."),
        ("h", "."),
        ("h", ""),
        ("h", "a/b"),
        ("h", "a\\b"),
        ("h", "a\x00b"),
        ("h", "a\nb"),
        ("h", "a\x1fb"),
        ("h", "a\x7fb"),
        ("h", "\x01"),
        ("h", "x" * 256),
        ("h", TEMP_PREFIX + "0000"),
    ],
)
def test_unsafe_segments_are_refused(tree, tmp_path, segments):
    with pytest.raises(UnsafePathError):
        tree.write(segments, b"x")
    assert files_under(tmp_path) == []


def test_symlinked_folder_in_the_root_is_refused(tree, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (tmp_path / "mirror" / "h").symlink_to(victim)
    with pytest.raises(UnsafePathError):
        tree.write(("h", "x.html"), b"evil")
    assert list(victim.iterdir()) == []
    assert tree.read(("h", "x.html")) is None


def test_symlinked_folder_deeper_is_refused(tree, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    tree.write(("h", "ok"), b"x")
    (tmp_path / "mirror/h/sub").symlink_to(victim)
    with pytest.raises(UnsafePathError):
        tree.write(("h", "sub", "x"), b"evil")
    assert list(victim.iterdir()) == []


def test_symlinked_file_is_refused_not_written_through(tree, tmp_path):
    target = tmp_path / "target.txt"
    target.write_bytes(b"precious")
    tree.write(("h", "ok"), b"x")
    (tmp_path / "mirror/h/file.txt").symlink_to(target)
    with pytest.raises(UnsafePathError):
        tree.write(("h", "file.txt"), b"evil")
    assert target.read_bytes() == b"precious"
    assert os.path.islink(tmp_path / "mirror/h/file.txt")
    assert tree.read(("h", "file.txt")) is None  # nor read through


def test_dangling_symlink_is_refused(tree, tmp_path):
    tree.write(("h", "ok"), b"x")
    (tmp_path / "mirror/h/new").symlink_to(tmp_path / "created-outside")
    with pytest.raises(UnsafePathError):
        tree.write(("h", "new"), b"evil")
    assert not (tmp_path / "created-outside").exists()


def test_failed_write_leaves_no_partial_file(tree, tmp_path):
    tree.write(("h", "page.html"), b"old")

    def chunks():
        yield b"new and half"
        raise OSError("connection lost")

    with pytest.raises(OSError, match="connection lost"):
        tree.write(("h", "page.html"), chunks())
    assert files_under(tmp_path / "mirror") == ["h/page.html"]
    assert tree.read(("h", "page.html")) == b"old"


def test_replacing_is_atomic_rename(tree, tmp_path):
    tree.write(("h", "f"), b"one")
    before = os.stat(tmp_path / "mirror/h/f").st_ino
    tree.write(("h", "f"), b"two")
    assert os.stat(tmp_path / "mirror/h/f").st_ino != before  # a new file renamed in
    assert tree.read(("h", "f")) == b"two"


def test_file_then_folder_both_kept(tree, tmp_path):
    assert tree.write(("h", "a"), b"file a") == ("h", "a")
    assert tree.write(("h", "a", "b"), b"file a/b") == ("h", "a%~d", "b")
    assert tree.plan(("h", "a", "c")) == ("h", "a%~d", "c")
    assert tree.read(("h", "a")) == b"file a"
    assert tree.read(("h", "a%~d", "b")) == b"file a/b"


def test_folder_then_file_both_kept(tree):
    tree.write(("h", "a", "b"), b"file a/b")
    assert tree.plan(("h", "a")) == ("h", "a%~f")
    assert tree.write(("h", "a"), b"file a") == ("h", "a%~f")
    assert tree.write(("h", "a.html", "x"), b"1") == ("h", "a.html", "x")
    assert tree.write(("h", "a.html"), b"2") == ("h", "a%~f.html")


def test_case_differing_names_both_kept(tree):
    tree.write(("h", "Readme"), b"1")
    tree.write(("h", "README"), b"2")
    assert tree.read(("h", "Readme")) == b"1"
    assert tree.read(("h", "README")) == b"2"


def test_forbidden_paths(tmp_path):
    tree = SafeTree(tmp_path / "m", forbidden=[("h", "feed.jsonl"), ("job",)])
    with pytest.raises(UnsafePathError):
        tree.write(("h", "feed.jsonl"), b"x")
    with pytest.raises(UnsafePathError):
        tree.write(("job", "requests.queue"), b"x")
    tree.write(("h", "other"), b"x")
    tree.close()


def test_plan_names_what_is_not_there_yet(tree, tmp_path):
    assert tree.plan(("h", "a", "b.html")) == ("h", "a", "b.html")
    tree.write(("h", "x"), b"1")
    assert tree.plan(("h", "a", "b.html")) == ("h", "a", "b.html")
    # the name a file holds is skipped for a folder below a missing one too
    assert tree.plan(("h", "x", "y", "z")) == ("h", "x%~d", "y", "z")
    assert not (tmp_path / "mirror/h/a").exists()  # plan creates nothing


def test_plan_refuses_a_symlinked_folder(tree, tmp_path):
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    tree.write(("h", "ok"), b"x")
    (tmp_path / "mirror/h/sub").symlink_to(victim)
    with pytest.raises(UnsafePathError):
        tree.plan(("h", "sub", "x"))
    with pytest.raises(UnsafePathError):
        tree.plan(("h", "sub"))
    (tmp_path / "mirror/h/gone").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UnsafePathError):
        tree.write(("h", "gone", "x"), b"evil")
    assert not (tmp_path / "nowhere").exists()


def test_folders_made_once_are_opened_again(tree, tmp_path):
    """The second write into a folder finds it (open first, no mkdir)."""
    for i in range(3):
        assert tree.write(("h", "a", "b", f"{i}.html"), b"%d" % i) == (
            "h",
            "a",
            "b",
            f"{i}.html",
        )
    assert files_under(tmp_path / "mirror") == [f"h/a/b/{i}.html" for i in range(3)]
    assert tree.read(("h", "a", "missing", "x")) is None
    assert not tree.exists(("h", "a", "missing", "x"))


def test_every_control_character_and_separator_is_refused_and_only_those():

    for code in range(0x250):
        name = f"a{chr(code)}b"
        bad = chr(code) in "/\\" or code < 32 or code == 127
        if bad:
            with pytest.raises(UnsafePathError):
                check_segments(("h", name))
        else:
            check_segments(("h", name))
    check_segments(("h", "ünï\u00a0\u2028.html"))  # not ASCII controls: names


def test_a_kills_temporary_files_are_removed_and_nothing_else(tmp_path):
    tree = SafeTree(tmp_path)
    tree.write(("a", "page.html"), b"page")
    # what a write killed between its temporary file and the rename leaves
    (tmp_path / "a" / f"{TEMP_PREFIX}0123456789abcdef").write_bytes(b"half")
    (tmp_path / f"{TEMP_PREFIX}fedcba9876543210").write_bytes(b"")
    outside = tmp_path.parent / "outside.txt"
    outside.write_text("kept")
    os.symlink(outside, tmp_path / f"{TEMP_PREFIX}link")
    assert tree.remove_temporaries() == 2
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert left == [f"{TEMP_PREFIX}link", "a", "a/page.html"]
    assert outside.read_text() == "kept"


# -- plan keeps the folders it walked (one system call a file, not five) ------------
# A folder replaced after plan walked it is not seen by the plans that
# follow (until forget_plans); write walks every folder again, never
# through a link, and its caller records the path write used.


def test_plan_after_a_folder_became_a_symlink_write_still_refuses(tree, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    tree.write(("h", "sub", "1.html"), b"1")
    assert tree.plan(("h", "sub", "2.html")) == ("h", "sub", "2.html")
    os.rename(tmp_path / "mirror/h/sub", tmp_path / "mirror/h/old")
    (tmp_path / "mirror/h/sub").symlink_to(victim)
    # the kept walk does not see the link; the write does, and refuses it
    assert tree.plan(("h", "sub", "3.html")) == ("h", "sub", "3.html")
    with pytest.raises(UnsafePathError):
        tree.write(("h", "sub", "3.html"), b"evil")
    assert list(victim.iterdir()) == []
    tree.forget_plans()
    with pytest.raises(UnsafePathError):
        tree.plan(("h", "sub", "3.html"))
    assert list(victim.iterdir()) == []


def test_plan_after_a_folder_became_a_file(tree, tmp_path):
    tree.write(("h", "a", "1.html"), b"1")
    assert tree.plan(("h", "a", "2.html")) == ("h", "a", "2.html")
    os.rename(tmp_path / "mirror/h/a", tmp_path / "mirror/h/old")
    (tmp_path / "mirror/h/a").write_bytes(b"a file now")
    assert tree.plan(("h", "a", "2.html")) == ("h", "a", "2.html")  # kept walk
    assert tree.write(("h", "a", "2.html"), b"2") == ("h", "a%~d", "2.html")
    tree.forget_plans()
    assert tree.plan(("h", "a", "3.html")) == ("h", "a%~d", "3.html")
    assert (tmp_path / "mirror/h/a").read_bytes() == b"a file now"


def test_plan_in_a_kept_folder_sees_its_names_each_time(tree, tmp_path):
    """Only the folders' walk is kept: the file's own name is looked at on
    every plan (a folder or a symlink put there since is seen)."""
    tree.write(("h", "a", "1.html"), b"1")
    assert tree.plan(("h", "a", "x")) == ("h", "a", "x")
    (tmp_path / "mirror/h/a/x").mkdir()
    assert tree.plan(("h", "a", "x")) == ("h", "a", "x%~f")
    (tmp_path / "mirror/h/a/y").symlink_to(tmp_path)
    with pytest.raises(UnsafePathError):
        tree.plan(("h", "a", "y"))
    assert tree.plan(("h", "a", "1.html")) == ("h", "a", "1.html")


def test_plan_keeps_a_bounded_number_of_folders(tmp_path, monkeypatch):
    monkeypatch.setattr(safefs, "PLANNED_FOLDERS", 3)
    fds = set(os.listdir("/proc/self/fd"))
    tree = SafeTree(tmp_path / "m")
    for i in range(10):
        tree.write(("h", str(i), "x"), b"x")
        assert tree.plan(("h", str(i), "y")) == ("h", str(i), "y")
        assert tree.plan(("h", str(i), "x")) == ("h", str(i), "x")
        assert len(tree._planned) <= 3
    tree.close()
    assert set(os.listdir("/proc/self/fd")) == fds


def test_writes_reads_and_refusals_leave_no_fd_open_and_the_root_usable(tmp_path):
    # write walks from the root's own fd (no dup): it must never close it,
    # and must close every folder it opened, the refused walks' included
    fds = set(os.listdir("/proc/self/fd"))
    tree = SafeTree(tmp_path / "m")
    tree.write(("top.html",), b"at the root")
    tree.write(("h", "a", "b", "c.html"), b"deep")
    (tmp_path / "outside").mkdir()
    (tmp_path / "m" / "h" / "link").symlink_to(tmp_path / "outside")
    for _ in range(3):
        with pytest.raises(UnsafePathError):
            tree.write(("h", "link", "x.html"), b"no")
        with pytest.raises(UnsafePathError):
            tree.write(("h", "link"), b"no")  # the file's name is a symlink
        assert tree.read(("h", "link", "x.html")) is None
        assert not tree.exists(("h", "missing", "x.html"))
        assert tree.read(("top.html",)) == b"at the root"
        assert tree.exists(("h", "a", "b", "c.html"))
        tree.write(("h", "a", "b", "c.html"), b"again")
    assert list((tmp_path / "outside").iterdir()) == []
    assert tree.read(("h", "a", "b", "c.html")) == b"again"
    tree.close()
    assert set(os.listdir("/proc/self/fd")) == fds


def test_temporary_names_are_the_trees_own_and_never_repeat(tmp_path, monkeypatch):
    made = []
    real_open = os.open

    def watch(path, flags, *args, **kwargs):
        if isinstance(path, str) and path.startswith(TEMP_PREFIX):
            made.append(path)
        return real_open(path, flags, *args, **kwargs)

    one, two = SafeTree(tmp_path / "m"), SafeTree(tmp_path / "m")
    monkeypatch.setattr(os, "open", watch)
    for i in range(5):
        one.write(("h", f"{i}.html"), b"x")
        two.write(("h", f"{i}.html"), b"y")
    monkeypatch.undo()
    one.close()
    two.close()
    assert len(made) == 10 and len(set(made)) == 10
    # two trees (the crawl's and its page worker's) never share a name
    assert {m[: len(TEMP_PREFIX) + 16] for m in made[0::2]}.isdisjoint(
        m[: len(TEMP_PREFIX) + 16] for m in made[1::2]
    )
    assert not [p for p in (tmp_path / "m" / "h").iterdir() if TEMP_PREFIX in p.name]
