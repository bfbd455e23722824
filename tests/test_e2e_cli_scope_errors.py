"""Bad scope/politeness input is one line from a real ``scrapy crawl`` and
exit status 2, before anything is crawled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent
RESOLVER = "tests.support.resolver.LoopbackTestResolver"


def scrapy_crawl(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "scrapy", "crawl", "webspider"]
    command += [
        "-s",
        f"TWISTED_DNS_RESOLVER={RESOLVER}",
        "-a",
        f"output={tmp_path / 'out'}",
    ]
    return subprocess.run(
        [*command, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-a", "url=http://site.test:9/", "-a", "exclude_re=(sort"],
            "webspider: error: exclude_re (WEBSPIDER_EXCLUDE_RE): invalid regex "
            "'(sort': missing ), unterminated subpattern at position 0",
        ),
        (
            ["-a", "url=http://site.test:9/", "-a", "include=http://site.test:9/docs/"],
            "webspider: error: no start URL is left after include/exclude/exclude_re: "
            "http://site.test:9/ (include)",
        ),
        (
            ["-a", "url=http://site.test:9/a", "-a", "exclude=ftp://site.test/"],
            "webspider: error: exclude (WEBSPIDER_EXCLUDE): invalid URL prefix "
            "'ftp://site.test/': only http and https are crawled",
        ),
        (
            ["-a", "url=http://site.test:9/", "-a", "include=@/nonexistent/list.txt"],
            "webspider: error: include (WEBSPIDER_INCLUDE): URL list file "
            "'/nonexistent/list.txt' does not exist",
        ),
        (
            [
                "-a",
                "url=http://site.test:9/",
                "-s",
                "WEBSPIDER_ROBOTSTXT_MAX_BYTES=1000",
            ],
            "webspider: error: WEBSPIDER_ROBOTSTXT_MAX_BYTES must be at least 512000, "
            "got 1000",
        ),
        (
            [
                "-a",
                "url=http://site.test:9/",
                "-s",
                "WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX=wait",
            ],
            "webspider: error: WEBSPIDER_POLITENESS_CRAWL_DELAY_OVER_MAX must be cap "
            "or skip, got 'wait'",
        ),
    ],
    ids=[
        "exclude_re",
        "no-seed-left",
        "bad-prefix",
        "missing-file",
        "robots-cap",
        "over-max",
    ],
)
def test_one_line_errors(tmp_path, args, message):
    result = scrapy_crawl(tmp_path, *args)
    assert result.returncode == 2, result.stderr
    # Scrapy's start-up banner may come first; the error is the one last line
    assert result.stderr.strip().splitlines()[-1] == message
    assert result.stderr.count("webspider: error:") == 1
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()
