"""Counts a worker's Redis round trips by call site (bench/redis_workers.py
``--round-trips``): put on PYTHONPATH, with WEBSPIDER_BENCH_ROUND_TRIPS
naming a folder, it wraps redis-py's ``Connection.send_packed_command``
(one call per command sent alone, one per pipeline) and writes, when the
process exits, ``<folder>/<pid>.json``: {"<module>:<function>": count}, the
call site being the first frame in webspider outside the Redis plumbing."""

from __future__ import annotations

import atexit
import json
import os
import sys
from collections import Counter
from pathlib import Path

_FOLDER = os.environ.get("WEBSPIDER_BENCH_ROUND_TRIPS")
#: modules that only carry calls to Redis: the caller is further up
_PLUMBING = (
    "webspider/frontier/redisstate.py",
    "webspider/frontier/redisrecords.py",
    "webspider/politeness/redisstore.py",
)
#: functions of webspider.politeness.shared that only carry calls
_CARRIERS = {"call", "_turn"}


def _install(folder: str) -> None:
    # only when counting: a process that does not count imports nothing
    from redis.connection import AbstractConnection  # noqa: PLC0415

    counts: Counter[str] = Counter()
    original = AbstractConnection.send_packed_command

    def counted(self, command, check_health=True):  # type: ignore[no-untyped-def]
        frame = sys._getframe(1)
        site = "?"
        while frame is not None:
            name = frame.f_code.co_filename
            if "/webspider/" in name and not name.endswith(_PLUMBING):
                func = frame.f_code.co_name
                if not (name.endswith("politeness/shared.py") and func in _CARRIERS):
                    module = name[name.rindex("/webspider/") + 1 : -3]
                    site = f"{module.replace('/', '.')}:{func}"
                    break
            frame = frame.f_back
        counts[site] += 1
        return original(self, command, check_health)

    AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]

    def write() -> None:
        path = Path(folder) / f"{os.getpid()}.json"
        path.write_text(json.dumps(dict(counts)))

    atexit.register(write)


if _FOLDER:
    _install(_FOLDER)
