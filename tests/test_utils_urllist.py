import pytest

from webspider.utils.urllist import URLListError, read_list, split_list


def test_split_list():
    assert split_list(" a, b,,c ,") == ["a", "b", "c"]
    assert split_list(["a ", " ", "b"]) == ["a", "b"]
    assert split_list(None) == []


def test_read_list_file_with_comments_and_blank_lines(tmp_path):
    path = tmp_path / "urls.txt"
    path.write_text("\ufeff# seeds\nhttp://a.test/\n\n  http://b.test/x  \n#x\n")
    assert read_list(f"@{path},http://c.test/") == [
        "http://a.test/",
        "http://b.test/x",
        "http://c.test/",
    ]


def test_read_json_lines(tmp_path):
    path = tmp_path / "deferred.jsonl"
    path.write_text(
        '{"url": "http://a.test/", "depth": 3}\n{"url": "http://b.test/"}\n'
    )
    assert read_list(f"@{path}") == ["http://a.test/", "http://b.test/"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "holds no URL"),
        ("# only a comment\n\n", "holds no URL"),
        ('{"nourl": 1}\n', ":1: JSON line has no 'url' string"),
        ("{broken\n", ":1: not a valid JSON line"),
    ],
)
def test_bad_files(tmp_path, content, message):
    path = tmp_path / "list.txt"
    path.write_text(content)
    with pytest.raises(URLListError) as info:
        read_list(f"@{path}")
    assert message in str(info.value)


def test_missing_file_is_named(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(URLListError, match="does not exist") as info:
        read_list(f"@{missing}")
    assert str(missing) in str(info.value)


def test_non_utf8_and_folder(tmp_path):
    bad = tmp_path / "bin.txt"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(URLListError, match="not UTF-8"):
        read_list(f"@{bad}")
    with pytest.raises(URLListError, match="not a file"):
        read_list(f"@{tmp_path}")
