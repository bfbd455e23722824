"""README.md's reference tables against what webspider reads and writes.

Every setting webspider reads, every stats key, item field, summary.json key
and output file a real crawl produces must be in README.md (the team's rule:
"every new setting, stats key, output file: documented"). The crawl is of a
small loopback site with the reporting features on, so most stats appear.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.support.crawl import crawl
from tests.test_e2e_reports import build_site
from webspider import settings as defaults
from webspider.config import SPIDER_ARGUMENTS
from webspider.items import PageItem

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text("utf-8")


def section(start: str, end: str) -> str:
    begin = README.index(f"\n{start}\n")
    return README[begin : README.index(f"\n{end}\n", begin)]


def first_cells(text: str) -> list[list[str]]:
    """The backticked names in the first cell of each table row."""
    cells = []
    for line in text.splitlines():
        if line.startswith("| `"):
            cell = re.split(r"(?<!\\)\|", line)[1]
            cells.append(re.findall(r"`([^`]+)`", cell))
    return cells


def stats_patterns() -> list[re.Pattern[str]]:
    """README's stats keys as patterns: ``<reason>`` is any one segment,
    ``…/x`` continues the key before it in the same row."""
    patterns = []
    for names in first_cells(section("## Stats", "## Signals")):
        previous = ""
        for name in names:
            key = name
            if key.startswith("…/"):
                key = previous.rsplit("/", 1)[0] + key[1:]
            previous = key
            parts = re.split(r"<[^>]*>", key.replace("\\|", "|"))
            patterns.append(re.compile("[^/]+".join(map(re.escape, parts)) + "$"))
    return patterns


def undocumented_stats(keys: set[str]) -> list[str]:
    patterns = stats_patterns()
    return sorted(
        key
        for key in keys
        if key.startswith("webspider/") and not any(p.match(key) for p in patterns)
    )


def test_stats_patterns_read_the_table():
    # the check can fail: a key README does not list is reported
    assert undocumented_stats({"webspider/pages/fetched_count"}) == []
    assert undocumented_stats({"webspider/skipped/url_count/scope"}) == []
    assert undocumented_stats({"webspider/body_memory/waited_count/response"}) == []
    assert undocumented_stats({"webspider/no/such_count"}) == [
        "webspider/no/such_count"
    ]


def test_every_setting_webspider_reads_is_in_the_settings_table():
    table = {
        names[0]
        for names in first_cells(
            section("## Settings", "### Scrapy settings webspider sets")
        )
    }
    read = {name for name in dir(defaults) if name.startswith("WEBSPIDER_")}
    for path in (ROOT / "webspider").rglob("*.py"):
        read.update(re.findall(r"[\"'](WEBSPIDER_[A-Z0-9_]+)[\"']", path.read_text()))
    assert sorted(read - table) == []
    assert sorted(table - read) == []


def test_every_spider_argument_is_in_the_arguments_table():
    rows = {}
    for line in section(
        "## Spider arguments", "## Bad input and exit status"
    ).splitlines():
        if line.startswith("| `"):
            cells = re.split(r"(?<!\\)\|", line)
            setting = re.findall(r"`([^`]+)`", cells[2])
            for name in re.findall(r"`([^`]+)`", cells[1]):
                rows[name] = setting
    assert {name: [setting] for name, setting in SPIDER_ARGUMENTS.items()} == rows


def test_every_item_field_is_in_the_item_fields_table():
    table = {
        names[0]
        for names in first_cells(section("## Item fields", "## request.meta keys"))
    }
    assert {f.name for f in dataclasses.fields(PageItem)} == table


@deferred_f_from_coro_f
async def test_stats_summary_and_output_files_of_a_crawl_are_documented(
    tmp_path, server, other_server
):
    build_site(server, other_server)
    result = await crawl(
        tmp_path,
        start_urls=server.url("/"),
        check_external="1",
        check_anchors="1",
        log_skipped="1",
        max_depth="1",
        max_rounds="0",
    )
    stats = set(result.stats)
    assert "webspider/broken/missing_anchor_count" in stats  # the features ran
    assert "webspider/depth/deferred_count" in stats
    assert undocumented_stats(stats) == []

    files = section("## Output files", "## Item fields")
    summary = json.loads((result.output / "summary.json").read_text("utf-8"))
    summary_row = next(
        line for line in files.splitlines() if line.startswith("| `summary.json`")
    )
    assert sorted(k for k in summary if f"`{k}`" not in summary_row) == []

    written = {p.name for p in result.output.iterdir()}
    assert {"pages.jsonl", "skipped.jsonl", "deferred.jsonl", "mirror"} <= written
    # a row's further names may be suffixes of its first (``-wal``, ``.lock``)
    table = {
        name.rstrip("/")
        for first, *more in first_cells(files)
        for name in (first, *more, *(first + m for m in more if m[:1] in "-."))
    }
    assert sorted(written - table) == []
