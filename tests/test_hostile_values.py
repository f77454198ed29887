"""What one crawled node sends cannot stop crawldash: every value a node chooses (its
services up to 2^64-1, its version and height) is served exactly where it is in the
protocol's range, and a row with a value beyond it, or of the wrong type, costs that row,
never the crawl, the watcher, the history or the archive."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from crawldash.app import NETWORKS
from crawldash.archive.preparing import prepare
from crawldash.crawl.count import count_nodes
from crawldash.crawl.decode import Rules, decode_snapshot
from crawldash.live.refreshing import refresher
from crawldash.live.snapshot.prepared import load_snapshot
from tests.conftest import eventually, until_served, watching
from tests.factories import api_body, export_body, row, rows, write_snapshot
from tests.loader_jobs import load_unless_marked
from tests.test_archive import run_archive
from tests.test_operations import key, scrape

TOP = 2**64 - 1  # every service bit set: a node may send it
BIT_63 = 2**63
GOOD, TOP_NODE, BIT_63_NODE = "203.0.113.5", "203.0.113.6", "203.0.113.7"


def with_value(address: str, index: int, value: Any) -> list[Any]:
    """A good export row of ``address`` with its field ``index`` replaced by ``value``."""
    changed = row(address)
    changed[index] = value
    return changed


def hostile_crawl() -> bytes:
    """Good rows, two nodes whose services set bit 63, and rows bitnodes never writes:
    a height and a version beyond 32 bits, a string port, a NaN latitude."""
    body = [
        row(GOOD),
        with_value(TOP_NODE, 5, TOP),
        with_value(BIT_63_NODE, 5, BIT_63),
        with_value("198.51.100.1", 6, -(2**63) - 1),
        with_value("198.51.100.2", 2, 2**63),
        with_value("198.51.100.3", 1, "8333"),
        with_value("198.51.100.4", 10, float("nan")),
        with_value("198.51.100.5", 5, 2**64),
    ]
    return json.dumps(body).encode()


def test_every_uint64_services_value_is_kept_and_bad_rows_skipped():
    snapshot = decode_snapshot(hostile_crawl(), 1)
    assert {a: n.services for a, n in snapshot.nodes.items() if n.services > 2**62} == {
        f"{TOP_NODE}:8333": TOP,
        f"{BIT_63_NODE}:8333": BIT_63,
    }
    assert len(snapshot.nodes) == 3
    assert snapshot.skipped_rows == 5
    counted = count_nodes(hostile_crawl())
    assert sorted(counted.addresses) == sorted(snapshot.nodes)
    assert counted.tallies["services"]["BIT_63"] == 2


async def test_a_node_with_every_service_bit_is_served_everywhere(serve, data_dir, now):
    write_snapshot(data_dir, now - 600, export_body(rows(3)))
    client = await serve()
    await watching(client)
    write_snapshot(data_dir, now, hostile_crawl())
    await until_served(client, now)

    snapshot = await (await client.get("/api/snapshot")).json()
    assert snapshot["nodes"][f"{TOP_NODE}:8333"][3] == TOP
    assert snapshot["nodes"][f"{BIT_63_NODE}:8333"][3] == BIT_63
    assert snapshot["total_nodes"] == 3
    check = await (await client.get(f"/api/check?address={TOP_NODE}:8333")).json()
    assert check["node"]["services"] == TOP
    listed = await client.get("/api/nodes?services=NETWORK&format=csv")
    assert listed.status == 200
    csv = await listed.text()
    assert f"{TOP_NODE}:8333" in csv
    assert str(TOP) in csv
    assert f"{BIT_63_NODE}:8333" not in csv  # bit 0 unset
    breakdown = await (await client.get("/api/breakdown?by=services")).json()
    bits = {entry["value"]: entry["nodes"] for entry in breakdown["rows"]}
    assert bits["BIT_63"] == 2
    history = await (await client.get("/api/history?limit=5")).json()
    assert history[-1]["timestamp"] == now
    for probe in ("/healthz", "/readyz"):
        assert (await client.get(probe)).status == 200

    write_snapshot(data_dir, now + 600, export_body(rows(4)))
    await until_served(client, now + 600)
    assert (await client.get("/healthz")).status == 200


async def test_any_other_error_in_preparing_a_crawl_costs_that_crawl_alone(
    serve, data_dir, now, monkeypatch, caplog
):
    """An error no load should raise rejects its crawl, with the reason in the log and in
    /metrics; the watcher goes on and the next crawl is served."""
    monkeypatch.setattr(refresher, "load_new_crawl", load_unless_marked)
    write_snapshot(data_dir, now - 600, export_body(rows(3)))
    client = await serve()
    await watching(client)
    marked = rows(4)
    marked[0][14] = "overflow"
    write_snapshot(data_dir, now, export_body(marked))

    async def rejected() -> bool:
        metrics = await scrape(client)
        return metrics.get(key("crawldash_files_rejected_total", kind="unprepared")) == 1

    await eventually(rejected)
    assert f"file rejected name={now}.json kind=unprepared" in caplog.text
    assert caplog.text.count("OverflowError: int too big to convert") == 2  # reason, trace
    write_snapshot(data_dir, now + 600, export_body(rows(5)))
    await until_served(client, now + 600)
    assert client.app[NETWORKS][0].watcher.restarts == 0
    assert (await client.get("/healthz")).status == 200


def test_the_archive_keeps_every_services_value_exactly(tmp_path: Path, now: int):
    data_dir, archive_dir = tmp_path / "data", tmp_path / "archive"
    write_snapshot(data_dir, now - 600, hostile_crawl())
    write_snapshot(data_dir, now, export_body(rows(3)))
    run_archive(data_dir, archive_dir)
    glob = f"{archive_dir}/network=main/*/*.parquet"
    found = duckdb.execute(
        f"SELECT address, services FROM read_parquet('{glob}') WHERE timestamp = {now - 600}"
    ).fetchall()
    assert dict(found) == {GOOD: 1033, TOP_NODE: TOP, BIT_63_NODE: BIT_63}


# Any JSON value, in any field of bitnodes' export row but the address.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=4,
)
changes = st.lists(st.tuples(st.integers(1, 14), json_values), min_size=1, max_size=3)
hostile_rows = st.lists(changes, min_size=1, max_size=3)


def crawl_of(hostile: list[list[tuple[int, Any]]]) -> tuple[bytes, list[str]]:
    """Ten good rows and a row per list of changes; the good rows' addresses."""
    good = rows(10)
    bad = []
    for number, fields in enumerate(hostile):
        changed = row(f"192.0.2.{number + 1}")
        for index, value in fields:
            changed[index] = value
        bad.append(changed)
    return json.dumps(good + bad).encode(), [f"{r[0]}:{r[1]}" for r in good]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_rows)
@example([[(5, BIT_63)]])
@example([[(5, TOP), (6, 2**31)], [(10, float("inf")), (1, "8333")]])
def test_any_value_in_any_field_costs_at_most_its_row(tmp_path_factory, hostile):
    """The loader's whole preparation, the count and the archive agree on every crawl:
    each is served with every good row (its hostile rows served or skipped), and nothing
    is raised."""
    body, good = crawl_of(hostile)
    folder = tmp_path_factory.mktemp("crawl")
    path = write_snapshot(folder, 1_700_000_000, body)
    rules = Rules(10**7)
    prepared = load_snapshot(path, rules)
    nodes = decode_snapshot(body, 1).nodes
    assert set(good) <= set(nodes)
    assert prepared.total_nodes == len(nodes)
    assert prepared.skipped_rows == len(good) + len(hostile) - len(nodes)
    assert sorted(count_nodes(body).addresses) == sorted(nodes)
    for whole_day in (False, True):
        archived = prepare(path, 1_700_000_000, rules, "main", whole_day)
        assert archived.crawl is not None, archived.refused
        assert archived.crawl.nodes == len(nodes)


def generated_crawls(count: int) -> list[bytes]:
    """``count`` crawls with hostile rows, the same on every run (derandomized)."""
    found: list[bytes] = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None)
    @given(hostile_rows)
    def collect(hostile: list[list[tuple[int, Any]]]) -> None:
        found.append(crawl_of(hostile)[0])

    collect()
    return found[:count]


@pytest.mark.slow
async def test_a_running_server_serves_each_hostile_crawl_and_goes_on(serve, data_dir, now, caplog):
    """Each generated crawl is served, its hostile rows served or skipped, and the good
    crawl after it too: no hostile crawl stops the watcher or is refused whole."""
    caplog.set_level(logging.WARNING, "crawldash")
    crawls = [hostile_crawl(), *generated_crawls(11)]
    start = now - 600 * 2 * len(crawls)
    write_snapshot(data_dir, start - 600, export_body(rows(3)))
    client = await serve()
    await watching(client)
    for number, body in enumerate(crawls):
        hostile, after = start + 1200 * number, start + 1200 * number + 600
        write_snapshot(data_dir, hostile, body)
        await until_served(client, hostile)
        write_snapshot(data_dir, after, export_body(rows(3 + number % 2)))
        await until_served(client, after)
        assert (await client.get("/healthz")).status == 200
    assert "file rejected" not in caplog.text
    history = await (await client.get(f"/api/history?limit={2 * len(crawls) + 1}")).json()
    assert len(history) == 2 * len(crawls) + 1


def test_a_number_beyond_a_float_is_null_where_null_is_allowed():
    """``1e400`` (no float holds it) in the API form, whose coordinates may be null: the
    node stays, unmapped; in the export form, whose may not, the row is skipped."""
    node = row(GOOD)[2:]
    api = api_body(1, {f"{GOOD}:8333": node, f"{TOP_NODE}:8333": node})
    api = api.replace(b"59.8983", b"1e400", 1)
    kept = decode_snapshot(api, 1)
    assert sorted(n.latitude is None for n in kept.nodes.values()) == [False, True]
    export = export_body([row(GOOD), row(TOP_NODE)]).replace(b"59.8983", b"-1e400", 1)
    assert list(decode_snapshot(export, 1).nodes) == [f"{TOP_NODE}:8333"]
    assert count_nodes(export).addresses == [f"{TOP_NODE}:8333"]
