"""A new crawl is served from one moment, every answer at once, as soon as the loader has
made it; the compressed codings of its bodies follow (and are made on request meanwhile).
A load's part sent ahead reaches the caller before its reply."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import brotli
import msgspec
import pytest

from crawldash.app import NETWORKS
from crawldash.crawl.decode import Rules
from crawldash.crawl.files import LoadError
from crawldash.live.bodies import CODINGS
from crawldash.live.loader.client import LoaderClient
from crawldash.live.loader.replies import packed, unpacked
from crawldash.live.snapshot.making import in_two
from crawldash.live.snapshot.prepared import Half, MapCodings, PreparedSnapshot, read_snapshot
from crawldash.live.state import State
from crawldash.live.stores.history import HistoryEntry
from crawldash.models import ApiSnapshot

from .conftest import eventually, until_served, watching
from .factories import export_body, row, rows, write_snapshot
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


async def test_a_head_starts_parts_reach_the_caller_that_takes_its_result():
    loader = LoaderClient()
    loader.head_start(part_then_reply)  # the newest crawl, loaded while the server starts
    loader.start()
    parts: list[object] = []
    try:
        assert await loader.run(part_then_reply, on_part=parts.append) == "replied"
        assert parts == ["ahead"]  # the crawl sent ahead is served from the head start too
        assert loader.runs == 1
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


def crawl_without_codings(timestamp: int) -> PreparedSnapshot:
    """A crawl as the loader sends it ahead: every answer, its bodies in identity."""
    path = write_snapshot(Path(tempfile.mkdtemp()), timestamp, export_body(rows(3)))
    snapshot, version = read_snapshot(path, Rules(10**6))
    served, _ = in_two(snapshot, version)
    assert served is not None
    return served


async def test_until_its_codings_come_a_crawl_is_served_in_identity_or_coded_now():
    state = State(history_size=10, clock=lambda: TS + 60)
    told: list[str] = []
    state.listeners.append(told.append)
    served = crawl_without_codings(TS)
    await state.switch_to(served, HistoryEntry(TS, 3))
    assert told == ["snapshot", "status"]  # told once, when every answer is about it
    assert state.status_at(TS + 60).snapshot_timestamp == TS
    assert state.history.recent(1)[0].timestamp == TS
    assert state.presence.newest() == TS
    assert state.first is served  # its codings are still to come
    assert state.snapshot_body("gzip", identity_ok=True) == served.identity
    assert state.snapshot_body("gzip", identity_ok=False) is None  # made by snapshot_in
    gzipped = await state.snapshot_in("gzip", identity_ok=False)
    assert gzipped is not None
    assert gzipped.encoding == "gzip"
    assert gzip.decompress(gzipped.body) == served.identity.body
    # The map is sent in identity meanwhile to a client that takes it; else its coding is
    # made on request, as the breakdowns' are, of this crawl.
    assert served.map.body(None, "br", identity_ok=True) == served.map.default["identity"]
    assert "br" not in served.map.default
    assert served.breakdowns["network"].body(20, "br").encoding == "br"
    assert json.loads(gzip.decompress(served.map.body(None, "gzip").body))["timestamp"] == TS


async def test_every_answer_names_a_new_crawl_from_the_moment_the_status_does(
    serve, data_dir, monkeypatch
):
    now = int(time.time())
    new, older = now - 10, now - 900  # the next crawl was due 300 s ago: answers expire
    write_snapshot(data_dir, now - 1500, export_body(rows(40)))
    write_snapshot(data_dir, older, export_body(rows(50)))
    client = await serve()
    await until_served(client, older)
    await watching(client)
    state: State = client.app[NETWORKS][0].state
    max_ages: list[int | None] = []  # what the answers about the older crawl said
    switch_to = state.switch_to

    async def look(
        served: PreparedSnapshot, entry: HistoryEntry, with_it: Callable[[], None] | None = None
    ) -> bool:
        max_ages.append(state.seconds_to_next_crawl())
        return await switch_to(served, entry, with_it)

    monkeypatch.setattr(state, "switch_to", look)
    write_snapshot(data_dir, new, export_body(rows(60_000, first_octet=10)))

    async def status_names_it() -> bool:
        status = await (await client.get("/api/status")).json()
        return bool(status["snapshot_timestamp"] == new)

    await eventually(status_names_it)
    # As soon as the status names it, so does every answer, whatever coding was asked for.
    plain = await client.get("/api/snapshot", headers={"Accept-Encoding": "gzip, br"})
    assert (await plain.json())["timestamp"] == new
    breakdown = await (await client.get("/api/breakdown?by=network")).json()
    assert breakdown["timestamp"] == new
    history = await (await client.get("/api/history?limit=1")).json()
    assert history[-1]["timestamp"] == new
    assert max_ages == [0]  # caches kept the older crawl's answers no longer
    await until_served(client, new)
    gzipped = await client.get("/api/snapshot", headers={"Accept-Encoding": "gzip"})
    assert gzipped.headers["Content-Encoding"] == "gzip"
    assert (await gzipped.json())["total_nodes"] == 60_000


def test_the_snapshot_body_is_what_msgspec_encodes_the_crawl_to(tmp_path: Path):
    onion = "a" * 56 + ".onion"
    crawl = [
        row("203.0.113.5"),
        row("2001:DB8::1", 18333, agent='/Sa"to\\shi\u2603:27.0.0/\n'),
        row(onion.upper(), tor=True),
        row("b" * 52 + ".b32.i2p", 1, tor=True),
        row("203.0.113.5", height=1),  # the later row of an address wins
    ]
    path = write_snapshot(tmp_path, TS, export_body(crawl))
    snapshot, version = read_snapshot(path, Rules(10**6))
    served, _ = in_two(snapshot, version)
    assert served is not None
    api = ApiSnapshot(TS, len(snapshot.nodes), snapshot.latest_height, snapshot.nodes)
    assert served.identity.body == msgspec.json.encode(api)
    nodes = json.loads(served.identity.body)["nodes"]
    assert nodes["203.0.113.5:8333"][4] == 1  # the height of the later row
    assert list(nodes) == [
        "203.0.113.5:8333",
        "[2001:db8::1]:18333",
        f"{onion}:8333",
        "b" * 52 + ".b32.i2p:1",
    ]


def test_each_nodes_json_is_read_from_the_snapshot_body_it_crosses_in(tmp_path: Path):
    crawl = [row(f"203.0.113.{i}", 8333 - i, agent=f'/Sa]t,[o"shi:{i}/') for i in range(40)]
    crawl += [row("2001:DB8::7"), row("a" * 56 + ".onion", tor=True)]
    path = write_snapshot(tmp_path, TS, export_body(list(reversed(crawl))))
    snapshot, version = read_snapshot(path, Rules(10**6))
    made, _ = in_two(snapshot, version)
    assert made is not None
    fd = os.memfd_create("reply")
    os.write(fd, b"".join(packed(made)))
    served = unpacked(fd, os.fstat(fd).st_size)
    assert served.nodes.blob is served.identity.body  # the rows crossed once, in the body
    assert list(served.nodes) == sorted(snapshot.nodes)
    for position, address in enumerate(served.nodes):
        assert served.nodes.row(position) == msgspec.json.encode(snapshot.nodes[address])
        assert json.loads(served.nodes[address]) == msgspec.to_builtins(
            snapshot.nodes[address].named()
        )
    with pytest.raises(KeyError):
        served.nodes["203.0.113.99:8333"]


def test_the_maps_codings_follow_the_half_that_holds_it(tmp_path: Path):
    path = write_snapshot(tmp_path, TS, export_body(rows(40)))
    snapshot, version = read_snapshot(path, Rules(10**6))
    parts: list[object] = []

    def beside(work: Callable[[], None]) -> Callable[[], bool]:
        work()  # here, at once: the half made beside is sent first
        return lambda: True

    in_two(snapshot, version, parts.append, beside)
    half, codings = parts[0], parts[1]
    assert isinstance(half, Half)
    assert isinstance(codings, MapCodings)
    assert set(half.fields["map"].default) == {"identity"}  # sent without its codings
    assert all(set(b.default) == {"identity", *CODINGS} for b in half.fields["breakdowns"].values())
    identity = half.fields["map"].default["identity"].body
    assert gzip.decompress(codings.codings["gzip"].body) == identity
    assert brotli.decompress(codings.codings["br"].body) == identity
    assert isinstance(parts[2], Half)
    assert "catalog" in parts[2].fields


async def test_a_new_crawls_map_gets_its_codings_from_the_loader(serve, data_dir):
    now = int(time.time())
    write_snapshot(data_dir, now - 600, export_body(rows(30)))
    client = await serve()
    await until_served(client, now - 600)
    await watching(client)
    write_snapshot(data_dir, now, export_body(rows(50, first_octet=10)))
    await until_served(client, now)
    served = client.app[NETWORKS][0].state.snapshot
    # Made by the loader, not on request: no map was asked for.
    assert set(served.map.default) == {"identity", *CODINGS}
    response = await client.get("/api/map", headers={"Accept-Encoding": "gzip"})
    assert response.headers["Content-Encoding"] == "gzip"
    assert (await response.json())["timestamp"] == now
