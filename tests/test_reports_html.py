from webspider.reports.html import Report, bar_chart, render
from webspider.reports.summary import Summary


def report(**kwargs) -> Report:
    summary = Summary(
        start_urls=["https://example.org/"],
        finish_reason="finished",
        pages=3,
        broken_internal=1,
        status_codes={200: 3, 404: 1},
    )
    return Report(summary=summary, **kwargs)


def test_self_contained():
    page = render(report())
    assert page.startswith("<!DOCTYPE html>")
    assert "<style>" in page and "<svg" in page
    for remote in ("<script", "<link", "src=", "@import", "url("):
        assert remote not in page


def test_everything_from_the_crawl_is_escaped():
    record = {
        "url": "https://example.org/<x>",
        "status": 404,
        "error": None,
        "internal": True,
        "referrer_count": 1,
        "referrers": [
            {"url": "https://example.org/", "text": "<b>bold</b>", "tag": "a"}
        ],
    }
    page = render(report(broken=[record]))
    assert "<b>bold</b>" not in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "https://example.org/&lt;x&gt;" in page


def test_stopped_early_is_visible():
    r = report()
    r.summary.finish_reason = "shutdown"
    assert "stopped early: shutdown" in render(r)


def test_many_referrers_are_folded():
    refs = [
        {"url": f"https://example.org/{i}", "text": "t", "tag": "a"} for i in range(80)
    ]
    record = {
        "url": "u",
        "status": 404,
        "internal": True,
        "referrer_count": 300,
        "referrers": refs,
    }
    page = render(report(broken=[record]))
    assert "<details><summary>297 more</summary>" in page
    assert page.count("https://example.org/7") < 20  # at most 50 shown


def test_bar_chart():
    svg = bar_chart([("200", 10, "#0a0"), ("404", 0, "#a00")])
    assert svg.count("<rect") == 2 and ">10<" in svg
    assert "Nothing to show" in bar_chart([])
