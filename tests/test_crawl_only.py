"""bitnodes' crawl-only output served: an install that runs only ``crawl.py`` writes each
crawl as rows of address, port, services and height. Every endpoint answers from such a
folder, over a real socket, each node with the fields it has and null for the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from crawldash.crawl.breakdown import BY
from crawldash.crawl.count import count_nodes
from crawldash.crawl.decode import decode_snapshot
from crawldash.crawl.files import LoadError

from .conftest import Client, Serve, json_of, until_complete, until_served
from .factories import ONION, export_body, row, write_snapshot, write_status

TS = 1_700_000_000
CRAWLS = 6  # 600 s apart
STEADY, IPV6, JOINER = "203.0.113.5", "2001:db8::7", "198.51.100.9"
NULLS_BEFORE = [None, None, None]  # protocol_version, user_agent, connected_since
NULLS_AFTER = [None] * 8  # hostname, city, country, latitude, longitude, timezone, asn, org


def crawl_rows(index: int) -> list[list[Any]]:
    """Crawl ``index`` as ``crawl.py``'s ``dump`` writes it: one row per (address, port,
    services) reached, so a node seen with two service sets has two rows; the height is 0
    where the crawler had none. JOINER is there in the odd crawls only."""
    rows: list[list[Any]] = [
        [STEADY, 8333, 1033, 900_000 + index],
        [IPV6, 8333, 1033, 900_000 + index],
        [ONION, 8333, 3081, 0],
        [STEADY, 8333, 3081, 900_000 + index],  # the later row for an address wins
    ]
    if index % 2:
        rows.append([JOINER, 8334, 1037, 900_000 + index])
    return rows


def crawl_body(index: int) -> bytes:
    return json.dumps(crawl_rows(index)).encode()  # as crawl.py: json.dumps(json_data)


@pytest.fixture
async def crawled(serve: Serve, data_dir: Path) -> Client:
    for index in range(CRAWLS):
        write_snapshot(data_dir, TS + 600 * index, crawl_body(index))
    write_status(data_dir, updated_at=TS + 600 * (CRAWLS - 1))
    client = await serve()
    await until_served(client, TS + 600 * (CRAWLS - 1))
    await until_complete(client)
    return client


async def test_the_snapshot_check_and_status_show_what_the_crawl_has(crawled: Client):
    latest = TS + 600 * (CRAWLS - 1)
    snapshot = await json_of(crawled, "/api/snapshot")
    assert snapshot["timestamp"] == latest
    assert snapshot["total_nodes"] == 4  # the odd last crawl has the joiner
    assert snapshot["latest_height"] == 900_000 + CRAWLS - 1
    assert snapshot["nodes"][f"{STEADY}:8333"] == [
        *NULLS_BEFORE,
        3081,
        900_000 + CRAWLS - 1,
        *NULLS_AFTER,
    ]
    assert snapshot["nodes"][f"{ONION}:8333"] == [*NULLS_BEFORE, 3081, 0, *NULLS_AFTER]
    assert f"[{IPV6}]:8333" in snapshot["nodes"]

    check = await json_of(crawled, f"/api/check?address={JOINER}:8334")
    assert check["reachable"] is True
    assert check["node"] == {
        "protocol_version": None,
        "user_agent": None,
        "connected_since": None,
        "services": 1037,
        "height": 900_000 + CRAWLS - 1,
        "hostname": None,
        "city": None,
        "country": None,
        "latitude": None,
        "longitude": None,
        "timezone": None,
        "asn": None,
        "org": None,
    }
    assert check["presence"]["crawls"] == CRAWLS
    assert check["presence"]["seen"] == CRAWLS // 2
    status = await json_of(crawled, "/api/status")
    assert status["snapshot_timestamp"] == latest
    assert status["history_complete"] is True


async def test_the_history_presence_and_changes_count_every_crawl(crawled: Client):
    history = await json_of(crawled, "/api/history?limit=100")
    assert [point["timestamp"] for point in history] == [TS + 600 * i for i in range(CRAWLS)]
    assert [point["reachable"] for point in history] == [3 + i % 2 for i in range(CRAWLS)]
    by_network = await json_of(crawled, "/api/history?limit=100&by=network")
    assert by_network[0]["networks"] == {"ipv4": 1, "ipv6": 1, "onion": 1, "i2p": 0, "cjdns": 0}
    assert by_network[1]["networks"]["ipv4"] == 2

    presence = await json_of(crawled, f"/api/presence?address={JOINER}:8334")
    assert [run["present"] for run in presence] == [False, True] * (CRAWLS // 2)
    changes = await json_of(crawled, "/api/changes")
    assert changes["joined"] == [f"{JOINER}:8334"]
    assert changes["left"] == []


async def test_breakdowns_count_the_missing_fields_under_null(crawled: Client):
    for by in BY:
        body = await json_of(crawled, f"/api/breakdown?by={by}")
        assert sum(r["nodes"] for r in body["rows"]) == (4 if by != "services" else 15), by
    for by in ("country", "asn", "user_agent", "version"):
        rows = (await json_of(crawled, f"/api/breakdown?by={by}"))["rows"]
        assert rows == [{"value": None, "nodes": 4, "share": 1.0}], by
    heights = (await json_of(crawled, "/api/breakdown?by=height"))["rows"]
    assert {r["value"]: r["nodes"] for r in heights} == {"consensus": 3, "behind_more": 1}


async def test_node_lists_filter_sort_and_export_without_the_fields(crawled: Client):
    listed = await json_of(crawled, "/api/nodes?limit=10")
    assert listed["count"] == 4
    first = listed["results"][0]
    assert first["address"] == f"{JOINER}:8334"
    assert first["services"] == 1037
    assert first["protocol_version"] is None
    assert first["latitude"] is None
    in_address_order = [node["address"] for node in listed["results"]]
    for sort in ("user_agent", "version", "connected_since", "country"):
        for descending, order in (("", in_address_order), ("-", in_address_order[::-1])):
            found = await json_of(crawled, f"/api/nodes?sort={descending}{sort}")
            assert [node["address"] for node in found["results"]] == order, sort
    assert (await json_of(crawled, "/api/nodes?version=70016"))["count"] == 0
    assert (await json_of(crawled, "/api/nodes?country=DE"))["count"] == 0
    assert (await json_of(crawled, "/api/nodes?services=P2P_V2"))["count"] == 2  # 3081
    assert (await json_of(crawled, f"/api/nodes?q={STEADY}"))["count"] == 1
    assert (await json_of(crawled, "/api/nodes?network=onion"))["count"] == 1

    csv = await crawled.get("/api/nodes?format=csv")
    assert csv.status == 200
    lines = (await csv.text()).splitlines()
    assert f"{JOINER}:8334,,,,1037,{900_000 + CRAWLS - 1},,,,,,,," in lines
    addresses = await crawled.get("/api/nodes?format=addresses")
    assert sorted((await addresses.text()).split()) == sorted(
        [f"{STEADY}:8333", f"[{IPV6}]:8333", f"{ONION}:8333", f"{JOINER}:8334"]
    )


async def test_the_v1_routes_answer_with_null_fields(crawled: Client):
    listed = await json_of(crawled, "/api/v1/snapshots/?limit=100")
    assert listed["count"] == CRAWLS
    latest = await json_of(crawled, "/api/v1/snapshots/latest/")
    assert latest["nodes"][f"{JOINER}:8334"][:4] == [None, None, None, 1037]
    older = await json_of(crawled, f"/api/v1/snapshots/{TS}/")  # decoded on request
    assert older["total_nodes"] == 3
    assert older["nodes"][f"{STEADY}:8333"] == [*NULLS_BEFORE, 3081, 900_000, *NULLS_AFTER]
    coordinates = await json_of(crawled, f"/api/v1/snapshots/{TS}/?field=coordinates")
    assert coordinates["coordinates"] == []  # no node has a place on a map
    agents = await json_of(crawled, f"/api/v1/snapshots/{TS}/?field=user_agents")
    assert agents["user_agents"] == []

    node = await json_of(crawled, f"/api/v1/nodes/{STEADY}-8333/")
    assert node["status"] == "UP"
    assert node["data"] == [*NULLS_BEFORE, 3081, 900_000 + CRAWLS - 1, *NULLS_AFTER]
    nodes = await json_of(crawled, "/api/v1/nodes/")
    assert nodes["count"] == 4
    assert all(item["data"][0] is None for item in nodes["results"])


def test_counting_and_decoding_take_crawl_only_rows():
    body = crawl_body(1)
    counted = count_nodes(body)
    assert counted.nodes == 4
    assert counted.latest_height == 900_001
    assert sorted(counted.addresses) == sorted(
        [f"{STEADY}:8333", f"[{IPV6}]:8333", f"{ONION}:8333", f"{JOINER}:8334"]
    )
    snapshot = decode_snapshot(body, TS)
    assert snapshot.nodes[f"{STEADY}:8333"].services == 3081
    assert snapshot.nodes[f"{ONION}:8333"].protocol_version is None


@pytest.mark.parametrize(
    "body",
    [
        b'[["203.0.113.5", 8333, 1033]]',  # three fields
        b'[["203.0.113.5", "8333", 1033, 900000]]',  # the port a string
        b'[["203.0.113.5", 8333, "NETWORK", 900000]]',  # services not a number
        b'[["203.0.113.5", 8333, 1033, null]]',  # a null height: crawl.py writes 0
    ],
    ids=["three fields", "string port", "string services", "null height"],
)
def test_rows_of_neither_form_are_refused_with_both_reasons(body: bytes):
    for decode in (lambda: decode_snapshot(body, TS), lambda: count_nodes(body)):
        with pytest.raises(LoadError) as refused:
            decode()
        assert refused.value.kind == "decode"
        assert "as export rows: " in str(refused.value)
        assert "as crawl-only rows: " in str(refused.value)


def test_a_row_of_the_other_form_is_skipped_and_counted_not_the_crawl():
    """One crawl is of one form: the form most rows have (export rows on a tie) is kept,
    and a row of the other costs itself, in the loader as in the count."""
    body = export_body([row("203.0.113.5")])[:-1] + b', ["198.51.100.9", 8333, 1033, 900000]]'
    snapshot = decode_snapshot(body, TS)
    assert list(snapshot.nodes) == ["203.0.113.5:8333"]
    assert snapshot.skipped_rows == 1
    assert count_nodes(body).addresses == ["203.0.113.5:8333"]
