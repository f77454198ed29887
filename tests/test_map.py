"""``/api/map``: the latest crawl's nodes grouped by rounded place, the nodes not mapped by
reason, a match on the user agent, its codings and validators, and its errors."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import brotli
import pytest

from crawldash.app import NETWORKS
from crawldash.live.snapshot.map import MAX_MATCHES_KEPT, NOT_MAPPED

from .conftest import Client
from .factories import I2P, ONION, api_body, export_body, row, write_snapshot
from .test_error_contract import assert_error_shape

T = 1_700_000_000
CJDNS = "fc00:1:2:3:4:5:6:7"


def placed(
    address: str,
    lat: float,
    lon: float,
    *,
    country: str | None = "DE",
    city: str | None = "Falkenstein",
    agent: str = "/Satoshi:27.0.0/",
) -> list[Any]:
    node = row(address, agent=agent)
    node[8], node[9], node[10], node[11] = city, country, lat, lon
    return node


MIXED = [
    placed("198.51.100.1", 50.4779, 12.3713),  # rounds to 50.5, 12.4
    placed("198.51.100.2", 50.51, 12.36, city="Zwickau"),  # the same group
    placed("2a01:4f8::1", 50.46, 12.41, agent="/Satoshi:27.1.0(Knots:20240801)/"),
    placed("198.51.100.3", 50.44, 12.4),  # 50.4: a group of its own
    placed(
        "198.51.100.4",
        -33.8688,
        151.2093,
        country="AU",
        city="Sydney",
        agent="/Satoshi:27.1.0(knots:20240801)/",
    ),
    placed("198.51.100.5", -0.04, 0.04, country="GA", city=None),  # rounds to 0.0, not -0.0
    placed("198.51.100.6", 0.0, 0.0, country=None, city=None),  # unknown: bitnodes' 0, 0
    placed("198.51.100.7", 0.0, 0.0, country="GH", city=None),  # a country: mapped at 0, 0
    row(ONION, tor=True),
    row(I2P, tor=True),
    row(CJDNS, tor=True),
]


async def served_map(client: Client, rows_: list[list[Any]], at: int = T, query: str = "") -> Any:
    write_snapshot(_data(client), at, export_body(rows_))
    await client.app[NETWORKS][0].refresher.refresh()
    response = await client.get("/api/map" + query)
    assert response.status == 200, await response.text()
    return await response.json()


def _data(client: Client) -> Path:
    return Path(client.app[NETWORKS][0].refresher.data_dir)


async def test_groups_are_rounded_places_most_nodes_first(client: Client):
    body = await served_map(client, MIXED)
    assert body["timestamp"] == T
    assert body["total_nodes"] == len(MIXED)
    groups = body["groups"]
    assert groups[0] == {
        "latitude": 50.5,
        "longitude": 12.4,
        "nodes": 3,
        "ipv4": 2,
        "ipv6": 1,
        "country": "DE",
        "place": "Falkenstein",  # the most common city; on a tie the first by name
    }
    places = {(g["latitude"], g["longitude"]): g["nodes"] for g in groups}
    assert places == {
        (50.5, 12.4): 3,
        (50.4, 12.4): 1,
        (-33.9, 151.2): 1,
        (0.0, 0.0): 2,  # -0.04, 0.04 and the row at 0, 0 that has a country
    }
    # Places of as many nodes in the order of their coordinates.
    assert [(g["latitude"], g["longitude"]) for g in groups] == [
        (50.5, 12.4),
        (0.0, 0.0),
        (-33.9, 151.2),
        (50.4, 12.4),
    ]
    zero = next(g for g in groups if g["latitude"] == 0.0)
    assert zero["country"] == "GA"  # one node each: on a tie, the first by name
    assert zero["place"] is None
    assert "-0.0" not in json.dumps(groups)
    assert [g["nodes"] for g in groups] == sorted((g["nodes"] for g in groups), reverse=True)
    assert body["mapped"] == sum(g["nodes"] for g in groups) == 7
    assert body["countries"] == {"DE": 4, "AU": 1, "GA": 1, "GH": 1}


async def test_every_node_not_mapped_is_counted_by_reason(client: Client):
    body = await served_map(client, MIXED)
    assert body["not_mapped_by"] == {
        "onion": 1,
        "i2p": 1,
        "cjdns": 1,
        "no_coordinates": 0,
        "unknown_location": 1,
    }
    assert list(body["not_mapped_by"]) == list(NOT_MAPPED)
    assert body["not_mapped"] == 4
    assert body["mapped"] + body["not_mapped"] == body["total_nodes"]


async def test_rows_without_usable_coordinates(client: Client, data_dir: Path):
    """The API form may hold null or out-of-range coordinates; the crawl-only form has none."""
    nodes = {
        "198.51.100.1:8333": placed("x", 52.52, 13.405)[2:],
        "198.51.100.2:8333": [*placed("x", 0, 0)[2:10], None, None, *placed("x", 0, 0)[12:]],
        "198.51.100.3:8333": placed("x", 91.0, 13.0)[2:],
        "198.51.100.4:8333": placed("x", 10.0, -180.5)[2:],
    }
    write_snapshot(data_dir, T, api_body(T, nodes))
    await client.app[NETWORKS][0].refresher.refresh()
    body = await (await client.get("/api/map")).json()
    assert body["not_mapped_by"]["no_coordinates"] == 3
    assert [(g["latitude"], g["longitude"]) for g in body["groups"]] == [(52.5, 13.4)]
    crawl_only = [["198.51.100.9", 8333, 1033, 900_000], ["198.51.100.8", 8333, 1033, 900_000]]
    write_snapshot(data_dir, T + 600, json.dumps(crawl_only).encode())
    await client.app[NETWORKS][0].refresher.refresh()
    body = await (await client.get("/api/map")).json()
    assert (body["groups"], body["not_mapped"], body["countries"]) == ([], 2, {})
    assert body["not_mapped_by"]["no_coordinates"] == 2


async def test_same_rows_in_another_order_same_answer(client: Client, data_dir: Path):
    await served_map(client, MIXED)
    first = await client.get("/api/map")
    shuffled = MIXED[:]
    random.Random(3).shuffle(shuffled)
    await served_map(client, shuffled, T + 600)
    again = await client.get("/api/map")
    one, other = await first.json(), await again.json()
    assert one["timestamp"] != other["timestamp"]
    assert one["groups"] == other["groups"]


async def test_match_counts_the_user_agents_that_hold_a_text(client: Client):
    body = await served_map(client, MIXED, query="?match=KNOTS")
    assert body["match"] == "KNOTS"
    assert body["matched"] == 2  # in any case, like /api/history's match
    matched = {(g["latitude"], g["longitude"]): g["matched"] for g in body["groups"]}
    assert matched == {(50.5, 12.4): 1, (50.4, 12.4): 0, (-33.9, 151.2): 1, (0.0, 0.0): 0}
    plain = await (await client.get("/api/map")).json()
    assert "match" not in plain
    assert all("matched" not in g for g in plain["groups"])
    nothing = await (await client.get("/api/map?match=no%20such%20client")).json()
    assert nothing["matched"] == 0
    assert {g["matched"] for g in nothing["groups"]} == {0}


async def test_match_answers_stay_right_past_the_cache(client: Client):
    await served_map(client, MIXED)
    texts = [f"{i}" for i in range(MAX_MATCHES_KEPT + 5)] + ["knots", "Satoshi"]
    for text in texts * 2:
        body = await (await client.get(f"/api/map?match={text}")).json()
        expected = sum(text.lower() in r[3].lower() for r in MIXED[:-3] if r[9] or r[10])
        assert (body["match"], body["matched"]) == (text, expected), text


async def test_codings_validators_and_a_new_crawl(client: Client):
    await served_map(client, MIXED)
    identity = await client.get("/api/map", headers={"Accept-Encoding": "identity"})
    raw = await identity.read()
    assert identity.headers["Vary"] == "Accept-Encoding"
    assert identity.headers["Content-Type"].startswith("application/json")
    assert identity.headers["Cache-Control"]
    etag = identity.headers["ETag"]
    assert etag.startswith('"')
    assert not etag.startswith("W/")
    for coding, decompress in (("gzip", gzip.decompress), ("br", brotli.decompress)):
        response = await client.get(
            "/api/map", headers={"Accept-Encoding": coding}, auto_decompress=False
        )
        assert response.headers["Content-Encoding"] == coding
        assert response.headers["ETag"] != etag
        assert decompress(await response.read()) == raw
    again = await client.get(
        "/api/map", headers={"If-None-Match": etag, "Accept-Encoding": "identity"}
    )
    assert again.status == 304
    assert await again.read() == b""
    modified = identity.headers["Last-Modified"]
    since = await client.get(
        "/api/map", headers={"If-Modified-Since": modified, "Accept-Encoding": "identity"}
    )
    assert since.status == 304
    matched = await client.get("/api/map?match=knots", headers={"Accept-Encoding": "gzip"})
    assert matched.headers["Content-Encoding"] == "gzip"
    assert matched.headers["ETag"] not in (etag,)
    await served_map(client, MIXED[:3], T + 600)
    newer = await client.get(
        "/api/map", headers={"If-None-Match": etag, "Accept-Encoding": "identity"}
    )
    assert newer.status == 200
    assert newer.headers["ETag"] != etag
    assert (await newer.json())["total_nodes"] == 3


@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        ("?match=", 400, "invalid_match"),
        ("?match=" + "k" * 65, 400, "invalid_match"),
        ("?match=a&match=b", 400, "invalid_match"),
    ],
)
async def test_bad_queries_get_the_one_error_shape(client: Client, query, status, code):
    await served_map(client, MIXED)
    response = await client.get("/api/map" + query)
    assert response.status == status
    body = await response.json()
    assert_error_shape(body, status, code)
    assert "64" in body["error"]["message"]


async def test_errors_before_a_crawl_and_refused_codings(client: Client):
    response = await client.get("/api/map")
    assert response.status == 503
    assert_error_shape(await response.json(), 503, "no_snapshot")
    await served_map(client, MIXED)
    refused = await client.get("/api/map", headers={"Accept-Encoding": "identity;q=0"})
    assert refused.status == 406
    assert_error_shape(await refused.json(), 406, "not_acceptable")
    assert (await client.get("/api/map?other=1&match=x%00")).status == 200  # ignored; any text


async def test_in_the_openapi_document(client: Client):
    await served_map(client, MIXED)
    document = await (await client.get("/api/openapi.json")).json()
    operation = document["paths"]["/api/map"]["get"]
    assert [p["name"] for p in operation["parameters"]] == ["match"]
    assert set(operation["responses"]) == {"200", "400", "406", "503"}
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    name = schema["$ref"].rsplit("/", 1)[1]
    component = document["components"]["schemas"][name]
    body = await (await client.get("/api/map?match=knots")).json()
    assert set(component["required"]) <= set(body) <= set(component["properties"])
    group = document["components"]["schemas"]["MapGroup"]
    assert set(group["required"]) <= set(body["groups"][0]) <= set(group["properties"])
