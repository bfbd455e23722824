"""The rule that lets the crawl's process read a page itself only when it has
time to spare (webspider.pageworker.readahead): its CPU time against the wall
over the last window. The pages it reads are tested end to end in
tests/test_e2e_pageworker.py; here, the measure the rule reads."""

from __future__ import annotations

import time

from webspider.pageworker.readahead import (
    BUSY_AT_MOST,
    BUSY_WINDOW,
    ReadAheadMiddleware,
)


def middleware(wall_ago: float, cpu_share: float) -> ReadAheadMiddleware:
    """A middleware whose window began ``wall_ago`` seconds ago, during which
    this process used ``cpu_share`` of the wall (as the window records it)."""
    mw = object.__new__(ReadAheadMiddleware)
    mw._busy = 0.0
    now, cpu = time.monotonic(), time.process_time()
    mw._window = (now - wall_ago, cpu - cpu_share * wall_ago)
    return mw


def test_a_process_that_had_time_to_spare_is_not_busy():
    assert not middleware(BUSY_WINDOW * 2, 0.5)._busy_here()


def test_a_process_busy_past_the_bound_is_busy():
    assert middleware(BUSY_WINDOW * 2, BUSY_AT_MOST + 0.1)._busy_here()


def test_the_verdict_holds_until_the_window_is_over():
    mw = middleware(BUSY_WINDOW * 2, 1.0)
    assert mw._busy_here()
    # a new window began: until it is BUSY_WINDOW long, the verdict stands,
    # however idle the process is meanwhile
    at, cpu = mw._window
    mw._window = (at - BUSY_WINDOW / 2, cpu)
    assert mw._busy_here()
    mw._window = (at - BUSY_WINDOW * 2, cpu)
    assert not mw._busy_here()
