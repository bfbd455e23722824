import pytest

from webspider.utils.atomic import open_atomic, write_atomic


def test_a_write_that_fails_half_way_leaves_the_old_file(tmp_path):
    path = tmp_path / "deferred.jsonl"
    write_atomic(path, "old complete line\n")
    with pytest.raises(RuntimeError), open_atomic(path) as fh:
        fh.write("half of a new")
        raise RuntimeError("killed")
    assert path.read_text() == "old complete line\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deferred.jsonl"]


def test_the_new_file_replaces_the_old_one_at_the_end(tmp_path):
    path = tmp_path / "sub" / "out.jsonl"
    with open_atomic(path) as fh:
        fh.write("a\n")
        assert not path.exists()  # not visible until complete
        fh.write("b\n")
    assert path.read_text() == "a\nb\n"
