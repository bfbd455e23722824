"""The asyncio tasks started on the running loop while a block runs, counted
by their coroutine's qualified name (a task factory, put back after)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator


@contextlib.contextmanager
def counted_tasks() -> Iterator[Counter[str]]:
    loop = asyncio.get_running_loop()
    before = loop.get_task_factory()
    started: Counter[str] = Counter()

    def factory(loop: Any, coro: Any, **kwargs: Any) -> Any:
        started[getattr(coro, "__qualname__", type(coro).__name__)] += 1
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(factory)
    try:
        yield started
    finally:
        loop.set_task_factory(before)
