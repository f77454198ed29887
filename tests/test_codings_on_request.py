"""Until a new crawl's compressed codings come from the loader, a client that refuses
identity has its coding made on request, in a thread: once however many ask for it
meanwhile (a burst right after a switch costs one compression), and kept with its crawl
only while that crawl is served."""

from __future__ import annotations

import asyncio
import gzip
import threading
from pathlib import Path

import brotli
import pytest

from crawldash.crawl.decode import Rules
from crawldash.live.snapshot.making import in_two
from crawldash.live.snapshot.prepared import PreparedSnapshot, read_snapshot
from crawldash.live.state import State
from crawldash.live.stores.history import HistoryEntry

from .factories import export_body, rows, write_snapshot

TS = 1_700_000_000
ASKING = 8  # requests at once


def without_codings(folder: Path, timestamp: int, nodes: int) -> PreparedSnapshot:
    """A crawl as the loader sends it ahead: every answer, its bodies in identity."""
    path = write_snapshot(folder, timestamp, export_body(rows(nodes)))
    snapshot, version = read_snapshot(path, Rules(10**7))
    served, _ = in_two(snapshot, version)
    assert served is not None
    return served


async def test_a_burst_that_refuses_identity_costs_one_compression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    state = State(history_size=10, clock=lambda: TS + 60)
    served = without_codings(tmp_path, TS, 500)
    await state.switch_to(served, HistoryEntry(TS, 500))
    made: list[int] = []  # the bytes of each compression
    compress = brotli.compress

    def counted(body: bytes, **options: int) -> bytes:
        made.append(len(body))
        coded: bytes = compress(body, **options)
        return coded

    monkeypatch.setattr(brotli, "compress", counted)
    answers = await asyncio.gather(
        *(state.snapshot_in("br", identity_ok=False) for _ in range(ASKING))
    )
    assert made == [len(served.identity.body)]
    assert all(answer is answers[0] for answer in answers)
    first = answers[0]
    assert first is not None
    assert brotli.decompress(first.body) == served.identity.body
    assert served.representations["br"] is first  # kept: the next request reads it
    assert await state.snapshot_in("br", identity_ok=False) is first
    assert len(made) == 1


async def test_a_coding_made_across_a_switch_is_not_kept_with_the_crawl_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    state = State(history_size=10, clock=lambda: TS + 660)
    older = without_codings(tmp_path, TS, 40)
    newer = without_codings(tmp_path, TS + 600, 41)  # made first: the making codes too
    await state.switch_to(older, HistoryEntry(TS, 40))
    entered, go_on = threading.Event(), threading.Event()
    compress = gzip.compress

    def held(body: bytes, *options: int, **keywords: float) -> bytes:
        entered.set()
        go_on.wait(60)
        return compress(body, *options, **keywords)  # type: ignore[arg-type]

    monkeypatch.setattr(gzip, "compress", held)
    asking = asyncio.ensure_future(state.snapshot_in("gzip", identity_ok=False))
    assert await asyncio.to_thread(entered.wait, 60)
    await state.switch_to(newer, HistoryEntry(TS + 600, 41))
    go_on.set()
    answer = await asyncio.wait_for(asking, 60)
    assert answer is not None
    assert gzip.decompress(answer.body) == older.identity.body  # asked before the switch
    assert "gzip" not in older.representations  # not kept with a crawl no longer served
    assert state.snapshot is newer
