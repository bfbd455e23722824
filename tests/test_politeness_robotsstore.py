"""robots.txt records as stored for other workers: plain JSON, checked."""

from __future__ import annotations

import json
import pickle

import pytest

from webspider.politeness.robotsstore import (
    READY,
    REFUSED,
    UNREACHABLE,
    RobotsRecord,
)


@pytest.mark.parametrize(
    "record",
    [
        RobotsRecord(READY, "User-agent: *\nCrawl-delay: 1\n", status=200, fetched=1.5),
        RobotsRecord(READY, None, status=404, fetched=2),
        RobotsRecord(UNREACHABLE, reason="HTTP 503", status=503),
        RobotsRecord(REFUSED, reason="private address"),
        RobotsRecord(READY, "Disallow: /é\n", status=200),
    ],
)
def test_round_trip(record):
    assert RobotsRecord.from_json(record.to_json()) == record
    assert RobotsRecord.from_json(record.to_json().encode()) == record


class Boom:
    def __reduce__(self):
        return (exec, ("raise SystemExit('executed')",))


def good() -> dict:
    return json.loads(RobotsRecord(READY, "x", status=200).to_json())


@pytest.mark.parametrize(
    "data",
    [
        pickle.dumps(Boom()),  # a crafted pickle: refused, never loaded
        pickle.dumps(RobotsRecord(READY, "x")),
        b"",
        b"\xff\xfe",
        "[]",
        json.dumps({**good(), "v": 2}),
        json.dumps({**good(), "outcome": "allow"}),
        json.dumps({**good(), "text": 3}),
        json.dumps({**good(), "status": "200"}),
        json.dumps({**good(), "status": True}),
        json.dumps({**good(), "reason": None}),
        json.dumps({**good(), "fetched": "now"}),
    ],
)
def test_anything_else_is_refused(data):
    with pytest.raises(ValueError):
        RobotsRecord.from_json(data)
