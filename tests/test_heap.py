"""After each refresh the state's long-lived objects are frozen, out of the collector's full
passes, and a cycle that died since the refresh before is still collected: nothing leaks."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

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
    serve: Serve, data_dir: Path
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

    async def freed() -> bool:
        return gone() is None  # the next refresh unfroze, collected, and froze the rest

    await eventually(freed)
