"""Every node's history: which addresses each crawl had, kept across pruning and restarts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crawldash.app import NETWORKS, create_app
from crawldash.crawl.decode import Rules
from crawldash.live.answers.changes import differences
from crawldash.live.loader.client import LoaderClient
from crawldash.live.refreshing.refresher import Refresher
from crawldash.live.state import State
from crawldash.live.stores.history import HistoryEntry
from crawldash.live.stores.index_codec import decode_presence, encode_presence
from crawldash.live.stores.index_files import HistoryStore, PresenceStore
from crawldash.live.stores.presence import Presence, Summary
from crawldash.settings.serve import Settings
from tests.conftest import Client, ClientFactory, until_complete
from tests.factories import ONION, export_body, row, rows, write_snapshot
from tests.helpers import write_crawls

TS = 1_700_000_000
STEADY = "203.0.113.5"  # in every crawl
IPV6 = "2001:db8::7"  # in crawls 0-3 and 6-7, asked for in another spelling
IPV6_SPELLED = "[2001:0DB8:0:0::0007]:8333"
FLAPPING = "198.51.100.9"  # in the even crawls
# Which of the eight crawls (600 s apart) each address was in.
MEMBERS = {
    STEADY: range(8),
    IPV6: (0, 1, 2, 3, 6, 7),
    FLAPPING: (0, 2, 4, 6),
    ONION: (5, 6, 7),
    "192.0.2.1": (0, 1),  # left for good
}


def crawl_rows(index: int) -> list[list[Any]]:
    return [
        row(address, tor=address == ONION) for address, crawls in MEMBERS.items() if index in crawls
    ]


async def presence(client: Client, address: str) -> dict[str, Any]:
    answer = await client.get("/api/check", params={"address": address})
    assert answer.status == 200
    return (await answer.json())["presence"]  # type: ignore[no-any-return]


async def runs(client: Client, address: str, limit: int | None = None) -> list[dict[str, Any]]:
    params = {"address": address} if limit is None else {"address": address, "limit": str(limit)}
    answer = await client.get("/api/presence", params=params)
    assert answer.status == 200
    assert answer.content_type == "application/json"
    return await answer.json()  # type: ignore[no-any-return]


def run(first: int, last: int, present: bool) -> dict[str, Any]:
    return {
        "from": TS + 600 * first,
        "to": TS + 600 * last,
        "present": present,
        "crawls": last - first + 1,
    }


async def test_presence_survives_pruning_and_a_restart(
    aiohttp_client: ClientFactory, settings: Settings, data_dir: Path
):
    write_crawls(data_dir, crawl_rows, 8, TS)
    client = await aiohttp_client(create_app(settings))
    await until_complete(client)
    await client.close()
    for index in range(4):  # the crawler prunes the older half of its files
        (data_dir / f"{TS + 600 * index}.json").unlink()
    client = await aiohttp_client(create_app(settings))
    await until_complete(client)
    assert await presence(client, f"{STEADY}:8333") == {
        "crawls": 8,
        "seen": 8,
        "first_seen": TS,
        "last_seen": TS + 4200,
    }
    assert await presence(client, IPV6_SPELLED) == {
        "crawls": 8,
        "seen": 6,
        "first_seen": TS,
        "last_seen": TS + 4200,
    }
    assert await presence(client, f"{ONION.upper()}:8333") == {
        "crawls": 8,
        "seen": 3,
        "first_seen": TS + 3000,
        "last_seen": TS + 4200,
    }
    gone = await (await client.get("/api/check", params={"address": "192.0.2.1:8333"})).json()
    assert gone["reachable"] is False
    assert gone["presence"] == {"crawls": 8, "seen": 2, "first_seen": TS, "last_seen": TS + 600}
    assert await presence(client, "192.0.2.200:8333") == {
        "crawls": 8,
        "seen": 0,
        "first_seen": None,
        "last_seen": None,
    }
    assert await runs(client, IPV6_SPELLED) == [run(0, 3, True), run(4, 5, False), run(6, 7, True)]
    assert await runs(client, f"{FLAPPING}:8333", limit=3) == [
        run(5, 5, False),
        run(6, 6, True),
        run(7, 7, False),
    ]
    assert await runs(client, f"{ONION.upper()}:8333") == [run(0, 4, False), run(5, 7, True)]
    assert await runs(client, "192.0.2.200:8333", limit=2) == [run(6, 7, False)]


async def test_presence_is_rebuilt_from_the_files_present_when_its_index_is_lost(
    aiohttp_client: ClientFactory, settings: Settings, data_dir: Path
):
    write_crawls(data_dir, crawl_rows, 8, TS)
    client = await aiohttp_client(create_app(settings))
    await until_complete(client)
    await client.close()
    store = PresenceStore.for_data_dir(settings.resolved_state_dir, data_dir)
    store.path.unlink()
    (data_dir / f"{TS}.json").unlink()
    client = await aiohttp_client(create_app(settings))
    await until_complete(client)
    # The pruned crawl's point stays in the history, but its membership is not known.
    assert len(await (await client.get("/api/history")).json()) == 8
    assert await presence(client, f"{STEADY}:8333") == {
        "crawls": 7,
        "seen": 7,
        "first_seen": TS + 600,
        "last_seen": TS + 4200,
    }
    await client.app[NETWORKS][0].refresher.presence_saver.flush()
    assert store.path.exists()  # and written again


async def test_points_from_an_index_without_membership_do_not_count(
    aiohttp_client: ClientFactory, settings: Settings, data_dir: Path
):
    """An index written before crawldash kept membership has counts only."""
    HistoryStore.for_data_dir(settings.resolved_state_dir, data_dir).save(
        [HistoryEntry(TS - 600 * i, 10) for i in range(3, 0, -1)]
    )
    write_snapshot(data_dir, TS, export_body(crawl_rows(0)))
    client = await aiohttp_client(create_app(settings))
    await until_complete(client)
    assert len(await (await client.get("/api/history")).json()) == 4
    assert (await presence(client, f"{STEADY}:8333"))["crawls"] == 1


async def test_changes_between_the_latest_crawl_and_an_earlier_one(serve, data_dir: Path):
    write_crawls(data_dir, crawl_rows, 8, TS)
    client = await serve()
    await until_complete(client)
    latest = await (await client.get("/api/changes")).json()
    assert latest["from"] == TS + 3600
    assert latest["to"] == TS + 4200
    assert latest["joined"] == []
    assert latest["left"] == [f"{FLAPPING}:8333"]
    assert (latest["joined_count"], latest["left_count"]) == (0, 1)
    assert latest["by_network"]["ipv4"] == {"joined": 0, "left": 1}
    since = await (await client.get("/api/changes", params={"since": TS + 700})).json()
    assert since["from"] == TS + 600  # the crawl at or just before since
    assert since["joined"] == [f"{ONION}:8333"]
    assert since["left"] == ["192.0.2.1:8333"]
    assert since["by_network"]["onion"] == {"joined": 1, "left": 0}
    assert set(since["by_network"]) == {"ipv4", "ipv6", "onion", "i2p", "cjdns"}
    too_early = await client.get("/api/changes", params={"since": TS - 1})
    assert too_early.status == 400
    error = (await too_early.json())["error"]
    assert error["code"] == "invalid_since"
    assert str(TS) in error["message"]  # says which is the oldest held


async def test_changes_of_a_single_crawl(client: Client, data_dir: Path):
    write_snapshot(data_dir, TS, export_body(crawl_rows(0)))
    await client.app[NETWORKS][0].refresher.refresh()
    answer = await (await client.get("/api/changes")).json()
    assert answer["from"] is None
    assert (answer["to"], answer["joined"], answer["left"]) == (TS, [], [])


def test_crawls_added_out_of_order_keep_their_order():
    """The background counting adds older crawls newest first, and a late file can land
    between two known crawls: runs and summaries follow time, not arrival."""
    presence = Presence()
    arrivals = [5, 7, 3, 4, 6, 1, 2, 0]
    members = {t: ["a"] if t % 2 else ["a", "b"] for t in arrivals}
    for t in arrivals:
        presence.add(t, members[t])
    assert presence.timestamps() == list(range(8))
    assert [(r.start, r.end, r.present) for r in presence.runs("b", 8)] == [
        (t, t, t % 2 == 0) for t in range(8)
    ]
    presence.add(3, ["b"])  # a crawl rewritten
    summary = presence.summary("a")
    assert (summary.crawls, summary.seen, summary.first_seen, summary.last_seen) == (8, 7, 0, 7)
    presence.retain(lambda t: t not in (0, 1, 4))  # the oldest two, and one between
    assert presence.timestamps() == [2, 3, 5, 6, 7]
    assert [(r.start, r.end, r.present, r.crawls) for r in presence.runs("b", 10)] == [
        (2, 3, True, 2),
        (5, 5, False, 1),
        (6, 6, True, 1),
        (7, 7, False, 1),
    ]
    assert differences(presence, 5, 6) == (["b"], [])
    again = decode_presence(encode_presence(presence))
    assert again.runs("b", 10) == presence.runs("b", 10)
    assert again.summary("a") == presence.summary("a")


def test_forgotten_crawls_never_show_again_when_their_slots_are_reused():
    presence = Presence()
    for t in range(10, 14):
        presence.add(t, ["steady", "gone"] if t < 12 else ["steady"])
    presence.retain(lambda t: t >= 12)  # the oldest two forgotten
    assert presence.summary("gone").seen == 0
    assert presence.summary("steady") == Summary(2, 2, 12, 13)
    presence.add(11, ["late"])  # an older crawl again, in the slot crawl 11 had
    presence.add(10, ["late", "steady"])
    assert presence.timestamps() == [10, 11, 12, 13]
    assert presence.summary("gone").seen == 0  # not from the bits of the forgotten crawls
    steady = presence.summary("steady")
    assert (steady.seen, steady.first_seen, steady.last_seen) == (3, 10, 13)
    assert [(r.start, r.end, r.present) for r in presence.runs("steady", 10)] == [
        (10, 10, True),
        (11, 11, False),
        (12, 13, True),
    ]
    presence.retain(lambda t: t >= 12)
    data = encode_presence(presence)  # strips what was forgotten
    assert "gone" not in presence.parts()[2]
    assert "late" not in presence.parts()[2]
    assert decode_presence(data).summary("steady") == presence.summary("steady")


@pytest.mark.parametrize("damage", [b"", b"not msgpack", b"\x95\x01\x02\x90\x90\x91\xc4\x01x"])
def test_an_unusable_presence_index_is_rebuilt_not_fatal(tmp_path: Path, damage: bytes, caplog):
    store = PresenceStore(tmp_path / "presence.msgpack")
    store.path.write_bytes(damage)
    assert len(store.load()) == 0
    assert "rebuilding it from files" in caplog.text


async def test_a_crawl_skipped_while_another_loaded_is_counted_first_in_the_loader(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    """Two new crawls at once: the newer is served, and the skipped one is counted before
    the served one is recorded, so both are added after the newest known (no pass over
    every address), and, being large, in the loader process (a thread would hold the GIL
    against requests while it decodes)."""
    monkeypatch.setattr("crawldash.live.refreshing.reading.COUNT_IN_THREAD_BYTES", 1000)
    write_snapshot(data_dir, TS, export_body(rows(3)))
    state, loader = State(history_size=10), LoaderClient()
    refresher = Refresher(
        state,
        HistoryStore(tmp_path / "history.json"),
        PresenceStore(tmp_path / "presence.msgpack"),
        loader,
        data_dir=data_dir,
        rules=Rules(10**7),
    )
    await refresher.refresh()
    loader.start()
    try:
        write_snapshot(data_dir, TS + 600, export_body(rows(40)))  # skipped, then counted
        write_snapshot(data_dir, TS + 1200, export_body(rows(5)))
        passes, runs = state.presence.passes, loader.runs
        await refresher.refresh()
        assert state.snapshot is not None
        assert state.snapshot.timestamp == TS + 1200
        assert state.presence.timestamps() == [TS, TS + 600, TS + 1200]
        assert state.presence.passes == passes
        assert loader.runs == runs + 2  # the served crawl's load and the skipped one's count
        assert state.presence.summary("198.0.0.20:8333") == Summary(3, 1, TS + 600, TS + 600)
        assert [e.timestamp for e in state.history.entries()] == [TS, TS + 600, TS + 1200]
    finally:
        await loader.close()
        await refresher.saver.flush()
