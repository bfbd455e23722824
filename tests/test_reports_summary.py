import json

from webspider.reports.progress import (
    Progress,
    fit,
    format_line,
    format_log,
    human_bytes,
)
from webspider.reports.summary import Summary, format_duration

#: the keys issue 7 promises, and the ones the docs list: renaming one breaks users
STABLE_KEYS = {
    "version",
    "start_urls",
    "started_at",
    "finished_at",
    "finish_reason",
    "elapsed_seconds",
    "pages",
    "urls_seen",
    "links",
    "requests",
    "bytes",
    "broken",
    "duplicates",
    "skipped",
    "rounds",
    "deferred_remaining",
    "status_codes",
    "outputs",
    "limits",
}


def test_summary_keys_are_stable_and_json():
    summary = Summary(
        broken_internal=2,
        broken_external=1,
        skipped={"scope": 3, "robots": 1},
        status_codes={404: 2, 200: 5},
        duplicates_exact=1,
    )
    data = json.loads(json.dumps(summary.as_dict()))
    assert set(data) == STABLE_KEYS
    assert data["broken"] == {
        "total": 3,
        "internal": 2,
        "external": 1,
        "missing_anchors": 0,
    }
    assert data["skipped"] == {"total": 4, "by_reason": {"robots": 1, "scope": 3}}
    assert data["status_codes"] == {"200": 5, "404": 2}
    assert data["duplicates"]["total"] == 1


def test_log_lines():
    lines = Summary(pages=3, finish_reason="finished", skipped={"scope": 2}).log_lines()
    assert lines[0].startswith("Crawl finished after 0.0s: 3 pages")
    assert "Skipped: 2 (scope 2)" in lines


def test_format_duration():
    assert format_duration(1.25) == "1.2s"
    assert format_duration(125) == "2m 05s"
    assert format_duration(3725.4) == "1h 02m 05s"


def test_progress_formats():
    p = Progress(
        pages=10, pending=5, in_flight=2, broken=1, pages_per_second=2.5, bytes=2048
    )
    assert format_line(p) == (
        "pages 10 | pending 5 | in flight 2 | deferred 0 | skipped 0 | broken 1 | "
        "2.5 pages/s | 2.0 KiB"
    )
    assert format_log(p).startswith("Progress: 10 pages, 5 pending, 2 in flight")
    assert human_bytes(999) == "999 B"
    assert len(fit(format_line(p), 40)) == 39
    assert fit("short", 40) == "short"
