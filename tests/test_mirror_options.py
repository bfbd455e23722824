from pathlib import Path

import pytest
from scrapy.settings import Settings

from webspider.config import ConfigError
from webspider.mirror.options import get_mirror_dir
from webspider.validation import check_settings


def settings(tmp_path, **values):
    s = Settings()
    s.setmodule("webspider.settings")
    s.set("WEBSPIDER_START_URLS", "http://site.test/")
    s.set("WEBSPIDER_OUTPUT", str(tmp_path / "out"))
    s.setdict(values)
    return s


def test_default_is_under_the_output(tmp_path):
    assert get_mirror_dir(settings(tmp_path)) == tmp_path / "out" / "mirror"


@pytest.mark.parametrize("off", ["0", "false", "no", "off", False])
def test_off(tmp_path, off):
    assert get_mirror_dir(settings(tmp_path, WEBSPIDER_MIRROR=off)) is None


def test_a_folder(tmp_path):
    s = settings(tmp_path, WEBSPIDER_MIRROR=str(tmp_path / "m"))
    assert get_mirror_dir(s) == Path(tmp_path / "m")


@pytest.mark.parametrize(
    ("mirror", "jobdir", "message"),
    [
        ("out", None, "must not be the output folder"),
        (".", None, "must not be the output folder"),
        ("job", "job", "must not overlap"),
        ("job/m", "job", "must not overlap"),
        ("m", "m/job", "must not overlap"),
    ],
)
def test_overlaps_with_the_crawls_state_are_refused(tmp_path, mirror, jobdir, message):
    values = {"WEBSPIDER_MIRROR": str(tmp_path / mirror)}
    if jobdir:
        values["JOBDIR"] = str(tmp_path / jobdir)
    s = settings(tmp_path, **values)
    s.set("WEBSPIDER_OUTPUT", str(tmp_path / "out"))
    with pytest.raises(ConfigError, match=message):
        check_settings(s)


def test_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="not a folder"):
        get_mirror_dir(settings(tmp_path, WEBSPIDER_MIRROR=str(tmp_path / "file")))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("WEBSPIDER_MIRROR_CONVERT_LINKS", "maybe"),
        ("WEBSPIDER_MIRROR_KEEP_ORIGINALS", "2x"),
        ("WEBSPIDER_MIRROR_THREAD_SIZE", "-1"),
    ],
)
def test_bad_values(tmp_path, name, value):
    with pytest.raises(ConfigError):
        check_settings(settings(tmp_path, **{name: value}))
