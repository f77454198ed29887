"""Heavy searches beside cheap requests (issue 26): ``q`` searches of a large crawl, a page
of a thousand at a time, must not hold the event loop for a whole search, so that
``/api/status`` is answered between their steps; and a search made in steps finds what a
search made at once finds."""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from typing import Any

import pytest

from crawldash.live.snapshot import catalog as catalog_module
from crawldash.live.snapshot.catalog import NodeCatalog, NodeFilter
from crawldash.models import NodeRow
from crawldash.web import node_answers, nodes

from .conftest import Client, json_of, until_served
from .factories import export_body, rows, write_snapshot

TS = 1_700_000_000
NODES = 50_000  # enough that a search made at once takes longer than WAIT_LIMIT
SEARCHES = 3  # searches each connection makes, one after another
LETTERS = "aehinorst"  # each is in every node's text: every search reads and pages them all
WAIT_LIMIT = 0.010  # s of the loop's CPU time a status answer may wait behind the searches
SMALL_STEP = 64  # nodes a step, for tests of results across many steps of a small crawl
SMALL_ROWS = 10  # rows of a page a step, likewise


@pytest.fixture
def small_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_module, "STEP", SMALL_STEP)
    monkeypatch.setattr(nodes, "STEP", SMALL_STEP)
    monkeypatch.setattr(nodes, "ROWS_PER_STEP", SMALL_ROWS)


@pytest.fixture
def nothing_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """No answer is kept for the crawl: each search is made anew, as a new query's is."""
    monkeypatch.setattr(node_answers, "MAX_BYTES", 0)


# Four connections of searches, as in the heavy-queries benchmark, and many more.
@pytest.mark.parametrize("heavy", [4, 16])
async def test_status_is_answered_between_the_steps_of_heavy_searches(
    serve, data_dir, heavy, nothing_kept
):
    write_snapshot(data_dir, TS, export_body(rows(NODES)))
    client: Client = await serve()
    await until_served(client, TS, within=60)
    search = (f"/api/nodes?q={letter}&limit=1000" for letter in itertools.cycle(LETTERS))
    # Warm: every connection is open, and the crawl's search texts are cut, before measuring.
    await asyncio.gather(*(json_of(client, next(search)) for _ in range(heavy)))
    await json_of(client, "/api/status")

    async def searching() -> None:
        for _ in range(SEARCHES):
            response = await client.get(next(search))
            body = await response.read()  # not decoded: the client's work counts in the waits
            assert body.startswith(b'{"timestamp":%d,"count":%d,' % (TS, NODES))

    searchers = [asyncio.create_task(searching()) for _ in range(heavy)]
    # How long each status answer waited, counted in the CPU time of the one thread that
    # runs the server, the client and this test: what the loop did before answering it,
    # untouched by whatever else the machine runs meanwhile.
    waits = []
    while not all(task.done() for task in searchers):
        started = time.thread_time()
        assert (await json_of(client, "/api/status"))["snapshot_timestamp"] == TS
        waits.append(time.thread_time() - started)
    await asyncio.gather(*searchers)
    # A search made at once holds the loop to its end: status is answered only between
    # whole searches, fewer times than there are searches, each answer behind one or
    # more of them. Made in steps side by side, a step of every search comes between two
    # answers: with many connections, fewer answers than searches again. Made in steps
    # and in turns, status is answered many times, each answer behind a step or two.
    assert len(waits) >= heavy * SEARCHES, waits
    assert statistics.median(waits) <= WAIT_LIMIT, waits


def varied(count: int) -> dict[str, NodeRow]:
    """Nodes with every kind of searchable text: IPv4, IPv6 and onion addresses, missing
    fields, other scripts, a line break inside a hostname, text shared across fields."""
    agents = ("/Satoshi:27.0.0/", "/Satoshi:26.1.0(Knots)/", "/btcd:0.24.2/", None, "/Ünï:1/")
    orgs = ("Hetzner Online GmbH", "Comcast Cable", None, "Deutsche Telekom AG", "TOR network")
    nodes = {}
    for i in range(count):
        address = (
            f"198.51.{i // 256 % 256}.{i % 256}:8333",
            f"[2001:db8::{i:x}]:8333",
            f"{chr(97 + i % 26) * 16}{i:040d}.onion:8333",
        )[i % 3]
        host = (None, f"node{i}.example.net", f"h\nost{i}", f"static.{i}.your-server.DE")[i % 4]
        nodes[address] = NodeRow(
            70016 - i % 3,
            agents[i % 5],
            1_700_000_000 - i % 1000,
            (1033, 1037, 3081)[i % 3],
            900_000 - i % 7,
            host,
            None,
            ("DE", "US", None)[i % 3],
            0.0,
            0.0,
            None,
            (f"AS{i % 4}", None)[i % 9 == 0],
            orgs[i % 5],
        )
    return nodes


def scanned(nodes: dict[str, NodeRow], q: str) -> set[str]:
    """The addresses a search for ``q`` matches, by reading every node's text (a hostname
    may hold a line break: a search for one finds it)."""
    return {
        address
        for address, row in nodes.items()
        if q in " ".join((address, row.hostname or "", row.user_agent or "", row.org or "")).lower()
    }


def test_a_search_in_steps_finds_what_a_scan_of_every_node_finds(small_steps):
    nodes = varied(5 * SMALL_STEP + 5)
    catalog = NodeCatalog.build(nodes, {address: "ipv4" for address in nodes})
    order = catalog.addresses
    texts = [
        " ".join((a, r.hostname or "", r.user_agent or "", r.org or "")).lower()
        for a, r in list(nodes.items())[::11]
    ]
    found = {t[at : at + n] for t in texts for n in (1, 2, 3, 5, 9) for at in (0, 5, 13, 30)}
    absent = {"zzzz", "ü1", "onion\n", "\n", ":8333 node1", "8333  ", "ï:1/ tor"}
    for q in sorted(q for q in found | absent if q):
        wanted = scanned(nodes, q)
        assert [order[i] for i in catalog.matching(NodeFilter(q=q))] == sorted(wanted), q
        by_height = catalog.matching(NodeFilter(q=q, country="DE"), "height", descending=True)
        heights = [(nodes[order[i]].height, i) for i in by_height]
        assert heights == sorted(heights, reverse=True), q  # ties too: the order reversed
        assert {order[i] for i in by_height} == {a for a in wanted if nodes[a].country == "DE"}
    every = NodeFilter("ipv4", "US", "AS1", "satoshi", 70015, 4, "8")
    eights = scanned(nodes, "8")
    passing = [
        order[i]
        for i in catalog.order("connected_since")
        if (row := nodes[order[i]]).country == "US"
        and row.asn == "AS1"
        and "satoshi" in (row.user_agent or "").lower()
        and row.protocol_version == 70015
        and row.services & 4
        and order[i] in eights
    ]
    assert passing  # nodes that pass every filter are among them
    assert [order[i] for i in catalog.matching(every, "connected_since")] == passing


class Counted(list[str]):
    """Search texts that count how many of them are read."""

    reads = 0

    def __getitem__(self, at: Any) -> Any:
        Counted.reads += 1
        return super().__getitem__(at)


def test_a_search_reads_at_most_a_step_of_nodes_between_two_yields(small_steps):
    nodes = varied(5 * SMALL_STEP + 5)
    catalog = NodeCatalog.build(nodes, {address: "ipv4" for address in nodes})
    steps = catalog.matching_steps(NodeFilter(q="8333"), "height", descending=True)
    cut = 0
    while len(catalog.texts) < len(nodes):  # the first search cuts the texts, in steps
        next(steps)
        cut += 1
    assert cut == 6
    object.__setattr__(catalog, "texts", Counted(catalog.texts))
    steps = catalog.matching_steps(NodeFilter(q="8333"), "height", descending=True)
    between = []
    while True:
        Counted.reads = 0
        try:
            next(steps)
        except StopIteration as done:
            between.append(Counted.reads)
            found = done.value
            break
        between.append(Counted.reads)
    assert between == [SMALL_STEP] * 5 + [5]  # every node read once, a step at a time
    assert sorted(catalog.addresses[i] for i in found) == sorted(nodes)


async def test_pages_made_in_steps_are_the_pages_made_at_once(serve, data_dir, small_steps):
    count = 2000  # many steps of a search, and pages of many steps
    write_snapshot(data_dir, TS, export_body(rows(count)))
    client: Client = await serve()
    await until_served(client, TS)
    everyone = sorted(f"{node[0]}:{node[1]}" for node in rows(count))
    listed = await (await client.get("/api/nodes?q=host&format=addresses")).text()
    assert listed.splitlines() == everyone
    wanted = [address for address in reversed(everyone) if ".1" in address]
    page = await json_of(client, "/api/nodes?q=.1&sort=-address&limit=1000&page=2")
    assert page["count"] == len(wanted) > 1000 + 2 * SMALL_ROWS
    assert [node["address"] for node in page["results"]] == wanted[1000:2000]
    table = await (await client.get("/api/nodes?q=.1&sort=-address&format=csv")).text()
    assert [line.split(",")[0] for line in table.splitlines()[1:]] == wanted
