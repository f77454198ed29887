"""After each refresh the state's long-lived objects are frozen, out of the collector's full
passes, and a cycle that died among them is collected by the next full collection (one an
hour at most, not at every refresh): nothing leaks."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawldash import app

from .conftest import Serve, eventually, until_served, watching
from .factories import export_body, rows, write_snapshot

TS = 1_700_000_000


class Cycle:
    """An object in a reference cycle: only the collector frees it."""

    def __init__(self) -> None:
        self.me = self


def frozen(thing: object) -> bool:
    """Whether ``thing`` is in the permanent generation (the collector lists it no more)."""
    return not any(tracked is thing for tracked in gc.get_objects())


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # leave the process as other tests expect it


async def test_a_refresh_freezes_what_is_kept_and_frees_cycles_that_died(
    serve: Serve, data_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    write_snapshot(data_dir, TS, export_body(rows(5)))
    client = await serve()
    await until_served(client, TS)
    await watching(client)
    alive = [Cycle()]
    gone = weakref.ref(alive[0])
    assert not frozen(alive[0])
    write_snapshot(data_dir, TS + 600, export_body(rows(6)))
    await until_served(client, TS + 600)

    async def settled() -> bool:
        return frozen(alive[0])  # the refresh's end froze what was alive, this among it

    await eventually(settled)
    alive.clear()
    gc.collect()  # a full pass of the collector's own does not reach what is frozen
    assert gone() is not None
    write_snapshot(data_dir, TS + 1200, export_body(rows(7)))
    await until_served(client, TS + 1200)
    assert gone() is not None  # a refresh walks only what was made since the one before
    monkeypatch.setattr(app, "FULL_COLLECTION_EVERY", 0.0)  # one is due: all is walked
    write_snapshot(data_dir, TS + 1800, export_body(rows(8)))
    await until_served(client, TS + 1800)

    async def freed() -> bool:
        return gone() is None  # that refresh unfroze, collected, and froze the rest

    await eventually(freed)
