"""A new crawl is served in two steps: its plain snapshot (and the status naming it) as
soon as the loader has encoded it, then everything else; a load's part sent ahead reaches
the caller before its reply."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from crawldash.app import NETWORKS
from crawldash.crawl.files import FileVersion, LoadError
from crawldash.live.bodies import represent
from crawldash.live.loader.client import LoaderClient
from crawldash.live.snapshot.prepared import FirstAnswers
from crawldash.live.state import State

from .conftest import eventually, until_served, watching
from .factories import export_body, rows, write_snapshot
from .loader_jobs import part_then_die, part_then_reply, part_then_wait

TS = 1_700_000_000


async def test_a_part_sent_ahead_reaches_the_caller_before_the_reply(tmp_path: Path):
    flag = tmp_path / "part-arrived"
    parts: list[object] = []

    def arrived(part: object) -> None:
        parts.append(part)
        flag.touch()  # the job replies only once this is there

    loader = LoaderClient()
    loader.start()
    try:
        assert await loader.run(part_then_wait, str(flag), on_part=arrived) == "whole"
        assert parts == [{"part": 1}]
        flag.unlink()
        # A caller that asks for no parts is given none, and its call still ends.
        assert await loader.run(part_then_reply) == "replied"
    finally:
        await loader.close()


async def test_in_a_thread_there_is_nothing_to_send_ahead_of(tmp_path: Path):
    loader = LoaderClient()  # not started: calls run in a thread
    parts: list[object] = []
    assert await loader.run(part_then_wait, str(tmp_path / "flag"), on_part=parts.append) == (
        "not sent"
    )
    assert parts == []


async def test_a_call_that_dies_after_its_part_is_still_a_death(tmp_path: Path):
    loader = LoaderClient()
    loader.start()
    parts: list[object] = []
    try:
        with pytest.raises(LoadError) as error:
            await loader.run(part_then_die, on_part=parts.append)
        assert error.value.kind == "loader_died"
        assert parts == [{"part": 1}, {"part": 1}]  # tried twice, each sent its part
    finally:
        await loader.close()


def first_answers(timestamp: int) -> FirstAnswers:
    body = b'{"timestamp": %d}' % timestamp
    return FirstAnswers(timestamp, 3, 900_000, represent(body, timestamp), FileVersion(1, 2))


def test_first_answers_name_the_crawl_until_it_is_served_whole_or_dropped():
    state = State(history_size=10, clock=lambda: TS + 60)
    told: list[str] = []
    state.listeners.append(told.append)
    state.set_first(first_answers(TS))
    assert state.status_at(TS + 60).snapshot_timestamp == TS
    assert state.snapshot_body("gzip", identity_ok=True) == first_answers(TS).identity
    assert state.snapshot_body("gzip", identity_ok=False) is None  # no other coding yet
    assert told == []  # the whole crawl, when it comes, is the event
    state.drop_first()
    assert state.status_at(TS + 60).snapshot_timestamp is None
    assert state.snapshot_body("identity", identity_ok=True) is None


async def test_the_plain_snapshot_is_served_ahead_of_the_rest(serve, data_dir):
    now = int(time.time())
    new, older = now - 10, now - 900  # the next crawl was due 300 s ago: answers expire
    write_snapshot(data_dir, now - 1500, export_body(rows(40)))
    write_snapshot(data_dir, older, export_body(rows(50)))
    client = await serve()
    await until_served(client, older)
    await watching(client)
    state = client.app[NETWORKS][0].state
    seen: list[tuple[int, int]] = []  # (first answers', whole snapshot's) timestamps
    set_first = state.set_first

    max_ages: list[int | None] = []  # what the answers still about the older crawl say

    def look(first: FirstAnswers) -> None:
        max_ages.append(state.seconds_to_next_crawl())
        set_first(first)
        max_ages.append(state.seconds_to_next_crawl())
        if state.first is not None and state.snapshot is not None:
            seen.append((state.first.timestamp, state.snapshot.timestamp))

    state.set_first = look
    write_snapshot(data_dir, new, export_body(rows(60_000, first_octet=10)))

    async def status_names_it() -> bool:
        status = await (await client.get("/api/status")).json()
        return bool(status["snapshot_timestamp"] == new)

    await eventually(status_names_it, within=30)
    # As soon as the status names it, the snapshot is it, whatever coding was asked for.
    plain = await client.get("/api/snapshot", headers={"Accept-Encoding": "gzip, br"})
    assert (await plain.json())["timestamp"] == new
    assert seen == [(new, older)]  # served ahead of the rest, once
    assert max_ages == [0, 0]  # caches keep the older crawl's answers no longer
    await until_served(client, new)
    gzipped = await client.get("/api/snapshot", headers={"Accept-Encoding": "gzip"})
    assert gzipped.headers["Content-Encoding"] == "gzip"
    assert (await gzipped.json())["total_nodes"] == 60_000
    breakdown = await (await client.get("/api/breakdown?by=network")).json()
    assert breakdown["timestamp"] == new
