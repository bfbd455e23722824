"""Record stores for the unit tests of the features that keep records: in
memory (a crawl without a crawl state) and in the embedded crawl state
(SQLite). Import the ``store`` fixture into a test module; ``reopen`` gives
the store as a resumed crawl finds it (committed, closed, opened again)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from webspider.frontier.sqlite import SQLiteState
from webspider.records import MemoryRecordStore

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from webspider.records import RecordStore


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RecordStore]:
    if request.param == "memory":
        yield MemoryRecordStore()
        return
    state = SQLiteState(tmp_path / "state.sqlite3")
    request.node.opened_states = [state]
    yield state
    for opened in request.node.opened_states:
        opened.close()


def reopen(request: pytest.FixtureRequest, store: RecordStore) -> RecordStore:
    """``store`` after a commit and a restart (the same object in memory)."""
    if not isinstance(store, SQLiteState):
        return store
    store.commit()
    store.close()
    state = SQLiteState(store.path)
    request.node.opened_states.append(state)
    return state
