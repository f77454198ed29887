"""Counting older crawls into the history: the count matches the loader's decoding, a
backlog is counted by processes on every core that end once it is done, and a refresh
never waits for a batch to be read."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from crawldash.crawl import spellings
from crawldash.crawl.address import NETWORKS, network_of
from crawldash.crawl.breakdown import breakdowns, networks_of
from crawldash.crawl.count import AddressChanges, CrawlCount, count_nodes, read_counts
from crawldash.crawl.decode import Rules, decode_snapshot
from crawldash.crawl.files import FileVersion, LoadError, list_data_dir
from crawldash.demo.fake_crawler import generate_crawls
from crawldash.live.loader.client import LoaderClient
from crawldash.live.loader.counters import Counters
from crawldash.live.refreshing.counting import Counting
from crawldash.live.refreshing.refresher import Refresher
from crawldash.live.refreshing.rejections import Rejections
from crawldash.live.state import State
from crawldash.live.stores.index_files import HistoryStore, PresenceStore
from crawldash.live.stores.presence import Presence

from .conftest import eventually
from .factories import I2P, ONION, api_body, export_body, row, rows, write_snapshot
from .process import PATIENCE

TS = 1_700_000_000


def mixed_rows() -> list[list[object]]:
    """Every network, a duplicate whose later row wins, an unusable address, odd spellings."""
    return [
        *rows(5, height=900_000),
        row("2001:DB8:0:0::1", height=900_001),
        row("fc00::7"),
        row(ONION.upper(), tor=True),
        row(I2P, tor=True),
        row("198.0.0.1", height=900_002),  # again: the later row's height wins
        row("not an address"),
        row("203.0.113.9", port=0),
    ]


def counting_refresher(data_dir: Path, tmp_path: Path, counters: Counters) -> Refresher:
    """A refresher of a fresh state over ``data_dir`` that counts a backlog with ``counters``."""
    return Refresher(
        State(history_size=1000),
        HistoryStore(tmp_path / "history.json"),
        PresenceStore(tmp_path / "presence.msgpack"),
        LoaderClient(),
        data_dir=data_dir,
        rules=Rules(10**7),
        counters=counters,
    )


async def count_the_backlog(refresher: Refresher) -> None:
    """Run the background counting until the history is complete."""
    task = asyncio.create_task(refresher.keep_counting())

    async def complete() -> bool:
        return refresher.state.history_complete

    try:
        await eventually(complete)
    finally:
        task.cancel()


@pytest.mark.parametrize("form", ["export", "api"])
def test_a_count_is_what_the_loader_decodes(form: str):
    if form == "export":
        body = export_body(mixed_rows())
    else:
        body = api_body(TS, {f"198.51.100.{i}:8333": r[2:] for i, r in enumerate(rows(4))})
    for _ in range(2):  # the second time from the addresses it remembers
        counted = count_nodes(body)
        snapshot = decode_snapshot(body, TS)
        assert counted.addresses == list(snapshot.nodes)
        assert counted.nodes == len(snapshot.nodes)
        assert counted.latest_height == snapshot.latest_height
        hosts = [a.rpartition(":")[0].strip("[]") for a in snapshot.nodes]
        expected = tuple(sum(network_of(h) == n for h in hosts) for n in NETWORKS)
        assert counted.networks == expected


def assert_counted_as_loaded(body: bytes) -> CrawlCount:
    """The count of a crawl is what the loader makes of it: the same addresses in the same
    order, height, networks, and by value the breakdowns of the latest crawl."""
    counted, snapshot = count_nodes(body), decode_snapshot(body, TS)
    assert counted.addresses == list(snapshot.nodes)
    assert (counted.nodes, counted.latest_height) == (len(snapshot.nodes), snapshot.latest_height)
    loaded = breakdowns(snapshot.nodes, snapshot.latest_height, networks_of(snapshot.nodes))
    assert counted.networks == tuple(dict(loaded["network"]).get(n, 0) for n in NETWORKS)
    assert counted.tallies == {by: dict(rows) for by, rows in loaded.items() if by != "network"}
    return counted


def test_counts_by_value_are_the_breakdowns_of_the_loaded_crawl():
    varied = [
        *rows(4, height=900_000),
        row("198.51.100.7", height=899_999, agent="/Satoshi:26.0.0/"),  # behind by one
        row("198.51.100.8", height=900_009),  # ahead
        row("198.51.100.9", height=899_000),  # far behind
        row(ONION, tor=True, agent="/Satoshi:25.0.0/"),  # no country: counted under None
    ]
    varied[0][5] = 0  # no service bit: counted under None
    varied[1][5] = 1 << 11 | 1 << 20  # P2P_V2 and an unknown bit
    varied[2][2] = 70015
    counted = assert_counted_as_loaded(export_body(varied))
    assert counted.tallies["height"] == {
        "consensus": 5,
        "behind_1_6": 1,
        "ahead": 1,
        "behind_more": 1,
    }


def test_rows_off_the_usual_port_are_their_own_nodes():
    """A crawl's usual port need not be its first row's; one host on two ports is two
    nodes; a host first seen on another port is spelled anew on the usual one."""
    testnet = [row(f"198.51.100.{i}", 18333) for i in range(6)]
    body = export_body(
        [
            row("203.0.113.1", 8333),  # first, off the usual port
            *testnet,
            row("198.51.100.1", 8333),  # a host of the usual port, on another
            row("2001:DB8::1", 18444),
            row("2001:db8::1", 18333),
            row("198.51.100.2", 70000),  # no such port: skipped
        ]
    )
    for _ in range(2):  # the second time from the hosts it remembers
        counted = assert_counted_as_loaded(body)
        assert counted.nodes == 10
        assert "198.51.100.1:8333" in counted.addresses
        assert "198.51.100.1:18333" in counted.addresses


def test_a_count_is_exact_when_its_memory_starts_again(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(spellings, "KNOWN_MAX", 3)
    for first_octet in (198, 203, 198):
        body = export_body([*rows(5, first_octet=first_octet), row("not an address")])
        assert assert_counted_as_loaded(body).nodes == 5
    remembered = spellings.Spellings.current
    assert remembered is not None
    assert len(remembered.by_port[8333]) == 6  # the first two crawls' hosts forgotten


def test_a_wrong_type_in_a_field_it_does_not_count_costs_the_row_as_in_the_loader():
    """Fields the history does not keep (here the organisation) are still checked: the row
    the loader skips is skipped by the count too, and the crawl keeps its other rows."""
    bad = row("198.51.100.1")
    bad[14] = 12389
    body = export_body([*rows(3), bad])
    counted, loaded = count_nodes(body), decode_snapshot(body, TS)
    assert counted.nodes == len(loaded.nodes) == 3
    assert loaded.skipped_rows == 1
    assert sorted(counted.addresses) == sorted(loaded.nodes)


@pytest.mark.parametrize("nodes", [0, 3])
async def test_a_count_crosses_from_a_counting_process_whole(tmp_path: Path, nodes: int):
    """What a counting process sends back (its addresses packed as one string) is the
    count made in this process, an empty crawl's included."""
    path = write_snapshot(
        tmp_path, TS, export_body([*rows(nodes - 1), row(ONION, tor=True)] if nodes else [])
    )
    counters = Counters(workers=1)
    try:
        counted = await counters.count(path, Rules(10**7, allow_empty=True))
    finally:
        counters.stop()
    assert counted == count_nodes(path.read_bytes(), allow_empty=True)
    assert len(counted.addresses) == nodes


@pytest.mark.parametrize(
    ("body", "kind"),
    [(b"[[1, 2]]", "decode"), (b"[]", "empty"), (export_body([row("nope")]), "no_usable_rows")],
)
def test_a_count_refuses_what_the_loader_refuses(body: bytes, kind: str):
    with pytest.raises(LoadError) as counted:
        count_nodes(body)
    with pytest.raises(LoadError) as loaded:
        decode_snapshot(body, TS)
    assert counted.value.kind == loaded.value.kind == kind


async def test_a_backlog_is_counted_by_processes_that_end_with_it(tmp_path: Path):
    data_dir = tmp_path / "data"
    for index in range(12):
        write_snapshot(data_dir, TS + 600 * index, export_body(rows(20 + index)))
    counters = Counters(workers=2)
    refresher = counting_refresher(data_dir, tmp_path, counters)
    await refresher.refresh(count_budget=0)
    assert not refresher.state.history_complete
    await count_the_backlog(refresher)
    assert not counters.running  # nothing of them stays at rest
    points = [refresher.state.history.get(TS + 600 * i) for i in range(12)]
    assert [p.reachable if p else None for p in points] == [20 + i for i in range(12)]
    assert refresher.state.presence.timestamps() == [TS + 600 * i for i in range(12)]


async def test_a_refresh_waits_for_one_record_never_for_a_batch(tmp_path: Path):
    data_dir = tmp_path / "data"
    for index in range(6):
        write_snapshot(data_dir, TS + 600 * index, export_body(rows(3)))
    listing = list_data_dir(data_dir)
    released, three_read = asyncio.Event(), asyncio.Event()
    reading: list[int] = []

    async def slow_count(name: str, version: FileVersion, batch: bool) -> object:
        reading.append(int(name.partition(".")[0]))
        if len(reading) == 3:
            three_read.set()
        await released.wait()  # a long read: the lock must be free meanwhile
        return count_nodes((data_dir / name).read_bytes())

    lock = asyncio.Lock()
    counting = Counting(State(history_size=10), Rejections(), slow_count, read_ahead=3)  # type: ignore[arg-type]
    task = asyncio.create_task(counting.count(listing, listing.newest_first, lock))
    await asyncio.wait_for(three_read.wait(), PATIENCE)
    assert reading == listing.newest_first[:3]  # read ahead, in order
    async with lock:  # what a refresh takes: free while the batch is read
        pass
    released.set()
    assert await task


async def test_a_backlog_added_in_bulk_has_the_membership_of_each_crawl(tmp_path: Path):
    """Nodes come and go (the demo generator's churn): the presence counted in bulk, newest
    first, answers as one built crawl by crawl does."""
    data_dir = tmp_path / "data"
    crawls = list(generate_crawls(nodes=60, crawls=80, interval=600, end=TS, seed=3))
    for crawl in crawls:
        write_snapshot(data_dir, crawl.timestamp, crawl.body())
    refresher = counting_refresher(data_dir, tmp_path, Counters(workers=2))
    await refresher.refresh(count_budget=0)
    await count_the_backlog(refresher)
    expected = Presence()
    for crawl in crawls:
        expected.add(crawl.timestamp, crawl.addresses())
    counted = refresher.state.presence
    assert counted.timestamps() == expected.timestamps()
    everyone = {address for crawl in crawls for address in crawl.addresses()}
    for address in everyone:
        assert counted.summary(address) == expected.summary(address)
        assert counted.runs(address, 80) == expected.runs(address, 80)


async def test_a_run_refused_by_the_presence_is_counted_again(tmp_path: Path):
    """A refresh counts older crawls under a batch's run that is not yet published (issue
    40): the presence refuses the run, and its crawls, which have points, are counted
    again, so that the presence covers every crawl of the history."""
    data_dir = tmp_path / "data"
    crawls = list(generate_crawls(nodes=60, crawls=8, interval=600, end=TS, seed=3))
    for crawl in crawls:
        write_snapshot(data_dir, crawl.timestamp, crawl.body())
    listing = list_data_dir(data_dir)
    stamps = listing.newest_first  # t7 .. t0
    held = asyncio.Event()

    async def count_file(name: str, version: FileVersion, batch: bool) -> object:
        if batch and name == f"{stamps[3]}.json":
            await held.wait()  # the batch's run (t6, t5) is recorded, not yet published
        return count_nodes((data_dir / name).read_bytes())

    state, lock = State(history_size=100), asyncio.Lock()
    counting = Counting(state, Rejections(), count_file, read_ahead=1)  # type: ignore[arg-type]
    assert await counting.count(listing, stamps[:1])  # the crawl served
    counting.uncounted.update(stamps[1:])
    batch = asyncio.create_task(counting.count(listing, stamps[1:5], lock))
    await eventually(lambda: _true(len(state.history) == 3))
    async with lock:  # a refresh: it counts older crawls, below the batch's run
        await counting.count(listing, stamps[5:])
    held.set()
    await batch
    await counting.count(listing, counting.update(listing, ()))
    assert state.presence.timestamps() == sorted(stamps)
    assert counting.update(listing, ()) == []
    expected = Presence()
    for crawl in crawls:
        expected.add(crawl.timestamp, crawl.addresses())
    for address in {a for crawl in crawls for a in crawl.addresses()}:
        assert state.presence.runs(address, 8) == expected.runs(address, 8)


def test_a_run_sends_each_crawl_after_the_first_counted_as_its_changes(tmp_path: Path):
    """A refused crawl and a gone one are skipped: the changes of the next crawl are from
    the one counted before it, and a run whose first crawl is refused starts whole."""
    rules = Rules(10**7)
    first = write_snapshot(tmp_path, TS, export_body(rows(5)))
    refused = write_snapshot(tmp_path, TS + 600, b"[[1, 2]]")
    third = write_snapshot(tmp_path, TS + 1200, export_body(rows(7)[2:]))
    gone = tmp_path / f"{TS + 1800}.json"
    fourth = write_snapshot(tmp_path, TS + 2400, export_body(rows(4)))
    counts = read_counts([first, refused, third, gone, fourth], rules)
    assert counts[0] == count_nodes(first.read_bytes())
    assert isinstance(counts[1], LoadError)
    assert counts[1].kind == "decode"
    assert counts[3] is None
    for (before, path), counted in zip(
        [(first, third), (third, fourth)], counts[2::2], strict=True
    ):
        assert isinstance(counted, CrawlCount)
        assert counted.addresses == []
        assert counted.changes is not None
        whole = set(count_nodes(path.read_bytes()).addresses)
        was = set(count_nodes(before.read_bytes()).addresses)
        assert sorted(counted.changes.added) == sorted(whole - was)
        assert sorted(counted.changes.removed) == sorted(was - whole)
        assert counted.nodes == len(whole)
    again = read_counts([refused, third, fourth], rules)
    assert isinstance(again[1], CrawlCount)
    assert again[1].changes is None
    assert again[1] == count_nodes(third.read_bytes())
    assert isinstance(again[2], CrawlCount)
    assert isinstance(counts[4], CrawlCount)
    assert again[2].changes is not None
    assert counts[4].changes is not None
    for changes in ("added", "removed"):  # each a set's difference, in no order
        assert sorted(getattr(again[2].changes, changes)) == sorted(
            getattr(counts[4].changes, changes)
        )


async def test_a_run_crosses_from_a_counting_process_whole(tmp_path: Path):
    paths = [write_snapshot(tmp_path, TS + 600 * i, export_body(rows(3 + i))) for i in range(3)]
    counters = Counters(workers=1)
    try:
        counted = await counters.count_run(paths, Rules(10**7))
    finally:
        counters.stop()
    assert counted == read_counts(paths, Rules(10**7))
    assert [c.changes for c in counted] == [  # type: ignore[union-attr]
        None,
        AddressChanges(["198.0.0.3:8333"], []),
        AddressChanges(["198.0.0.4:8333"], []),
    ]


@pytest.mark.parametrize("at_once", [False, True])
async def test_a_backlog_counted_in_runs_keeps_each_crawl_refused_or_rewritten(
    tmp_path: Path, at_once: bool
):
    """Runs of crawls sent as changes, with a refused crawl first in a run and one amid
    it, and a crawl rewritten after the folder was listed: the presence answers as one
    built crawl by crawl from the files as they end up. Counted at once (one refresh's
    budget), the crawls refused make a run of older crawls published in the middle of a
    run: the crawl after it has changes from a crawl of the run published."""
    data_dir = tmp_path / "data"
    crawls = list(generate_crawls(nodes=60, crawls=40, interval=600, end=TS, seed=5))
    for crawl in crawls:
        write_snapshot(data_dir, crawl.timestamp, crawl.body())
    refused = {crawls[-10].timestamp, crawls[20].timestamp}  # newest first: 9th, 19th
    for timestamp in refused:
        write_snapshot(data_dir, timestamp, b"[[1, 2]]")
    refresher = counting_refresher(data_dir, tmp_path, Counters(workers=2))
    rewritten = crawls[11]
    if at_once:
        write_snapshot(data_dir, rewritten.timestamp, export_body(rows(9, first_octet=10)))
        await refresher.refresh(count_budget=100)
    else:
        await refresher.refresh(count_budget=0)
        # after the listing: counted as it is when read, then again once listed anew
        write_snapshot(data_dir, rewritten.timestamp, export_body(rows(9, first_octet=10)))
        await count_the_backlog(refresher)
        await refresher.refresh(count_budget=100)
        await count_the_backlog(refresher)
    assert refresher.state.history_complete
    expected = Presence()
    for crawl in crawls:
        if crawl.timestamp in refused:
            continue
        path = data_dir / f"{crawl.timestamp}.json"
        expected.add(crawl.timestamp, count_nodes(path.read_bytes()).addresses)
    counted = refresher.state.presence
    assert counted.timestamps() == expected.timestamps()
    everyone = {a for crawl in crawls for a in crawl.addresses()} | {
        f"10.0.0.{i}:8333" for i in range(9)
    }
    for address in everyone:
        assert counted.runs(address, 40) == expected.runs(address, 40)
    assert refresher.state.history.get(rewritten.timestamp).reachable == 9  # type: ignore[union-attr]


async def _true(value: bool) -> bool:
    return value
