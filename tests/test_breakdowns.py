"""What the network is made of: breakdowns and the filtered node list, against a crawl
written in the test and counted here directly."""

from __future__ import annotations

import csv
import io
from collections import Counter
from typing import Any

import msgspec
import pytest
from yarl import URL

from crawldash.app import create_app
from crawldash.live.snapshot.catalog import NodeCatalog
from crawldash.models import NodeRow
from crawldash.settings.serve import Settings

from .conftest import Client, until_served, watching
from .factories import I2P, ONION, export_body, row, write_snapshot
from .test_operations import scrape

TS = 1_700_000_000
CONSENSUS = 900_000


def crawl() -> list[list[Any]]:
    """A crawl with every kind of value, missing ones included."""
    rows = []
    for i in range(40):
        node = row(
            f"198.51.{i // 10}.{i}", height=CONSENSUS - (i % 4) * 3, agent=f"/Satoshi:2{i % 3}.0.0/"
        )
        node[5] = (1 | 8 | 1024) if i % 2 else (1 | 8 | 1024 | 2048)  # services
        node[9] = ("DE", "US", None)[i % 3]  # country, sometimes missing
        node[13], node[14] = (("AS24940", "Hetzner"), ("AS7922", "Comcast"))[i % 2]
        rows.append(node)
    rows.append(row("2001:db8::7", height=CONSENSUS + 1, agent="/btcd:0.24.2/"))
    rows.append(row(ONION, tor=True, height=CONSENSUS))
    rows.append(row(I2P, tor=True, height=CONSENSUS - 100))
    tor = row("a" * 56 + ".onion", tor=True)
    tor[3] = None  # no user agent
    tor[5] = 0  # no services
    rows.append(tor)
    return rows


@pytest.fixture
async def served(serve, data_dir) -> Client:
    write_snapshot(data_dir, TS, export_body(crawl()))
    client: Client = await serve()
    return client


def expected(by: str) -> Counter[Any]:
    counts: Counter[Any] = Counter()
    for node in crawl():
        address, services, height = node[0], node[5], node[6]
        if by == "network":
            counts[
                "onion"
                if address.endswith(".onion")
                else "i2p"
                if address.endswith(".i2p")
                else "ipv6"
                if ":" in address
                else "ipv4"
            ] += 1
        elif by == "services":
            names = {0: "NETWORK", 3: "WITNESS", 10: "NETWORK_LIMITED", 11: "P2P_V2"}
            bits: list[str | None] = [n for bit, n in names.items() if services >> bit & 1]
            counts.update(bits or [None])
        elif by == "height":
            gap = CONSENSUS - height
            counts[
                "consensus"
                if gap == 0
                else "ahead"
                if gap < 0
                else "behind_1_6"
                if gap <= 6
                else "behind_more"
            ] += 1
        else:
            index = {"country": 9, "asn": 13, "user_agent": 3, "version": 2}[by]
            counts[node[index]] += 1
    return counts


@pytest.mark.parametrize(
    "by", ["network", "country", "asn", "user_agent", "version", "services", "height"]
)
async def test_each_breakdown_counts_every_node(served: Client, by: str):
    body = await (await served.get(f"/api/breakdown?by={by}&limit=1000")).json()
    assert (body["timestamp"], body["total_nodes"], body["by"]) == (TS, 44, by)
    counted = {r["value"]: r["nodes"] for r in body["rows"]}
    assert counted == dict(expected(by))  # missing values under null, never dropped
    order = [(-r["nodes"], r["value"] is None, str(r["value"])) for r in body["rows"]]
    assert order == sorted(order)
    assert all(r["share"] == round(r["nodes"] / 44, 4) for r in body["rows"])


async def test_a_breakdown_is_cut_with_an_other_row(served: Client):
    body = await (await served.get("/api/breakdown?by=user_agent&limit=2")).json()
    assert len(body["rows"]) == 3
    assert body["rows"][-1]["value"] == "other"
    assert sum(r["nodes"] for r in body["rows"]) == 44
    asn = await (await served.get("/api/breakdown?by=asn")).json()
    assert {r["value"]: r.get("org") for r in asn["rows"]}["AS24940"] == "Hetzner"


async def test_the_default_breakdown_is_compressed_once(served: Client):
    plain = await served.get("/api/breakdown?by=country", headers={"Accept-Encoding": "identity"})
    gzip = await served.get("/api/breakdown?by=country", headers={"Accept-Encoding": "gzip"})
    assert gzip.headers["Content-Encoding"] == "gzip"
    assert await gzip.json() == await plain.json()
    again = await served.get(
        "/api/breakdown?by=country", headers={"If-None-Match": plain.headers["ETag"]}
    )
    assert again.status == 304


async def test_nodes_match_every_filter(served: Client):
    page = await (await served.get("/api/nodes?country=de&services=p2p_v2")).json()
    wanted = [n for n in crawl() if n[9] == "DE" and n[5] & 2048]
    assert page["count"] == len(wanted) > 0
    assert {r["address"] for r in page["results"]} == {f"{n[0]}:8333" for n in wanted}
    assert set(page["results"][0]) == {"address", *FIELDS}
    tor = await (await served.get("/api/nodes?network=onion")).json()
    assert tor["count"] == 2
    text = await (await served.get("/api/nodes?q=BTCD")).json()
    assert [r["address"] for r in text["results"]] == ["[2001:db8::7]:8333"]
    agents = await (await served.get("/api/nodes?user_agent=satoshi:21&asn=as7922")).json()
    assert agents["count"] == len(
        [n for n in crawl() if "Satoshi:21" in (n[3] or "") and n[13] == "AS7922"]
    )


FIELDS = (
    "protocol_version",
    "user_agent",
    "connected_since",
    "services",
    "height",
    "hostname",
    "city",
    "country",
    "latitude",
    "longitude",
    "timezone",
    "asn",
    "org",
)


async def test_nodes_are_paged_with_links(served: Client):
    first = await (await served.get("/api/nodes?limit=10&sort=-height")).json()
    assert (first["count"], len(first["results"]), first["previous"]) == (44, 10, None)
    heights = [r["height"] for r in first["results"]]
    assert heights == sorted(heights, reverse=True)
    link = URL(first["next"])
    assert link.is_absolute()
    assert link.query["page"] == "2"
    last = await (await served.get(link.update_query(page="5").path_qs)).json()
    assert len(last["results"]) == 4
    assert last["next"] is None
    assert URL(last["previous"]).query["page"] == "4"


async def test_nodes_as_csv_and_as_addresses(served: Client):
    response = await served.get("/api/nodes?network=ipv4&format=csv")
    assert response.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert f"crawldash-nodes-{TS}.csv" in response.headers["Content-Disposition"]
    table = list(csv.reader(io.StringIO(await response.text())))
    assert table[0] == ["address", *FIELDS]
    assert len(table) - 1 == 40
    listed = await (await served.get("/api/nodes?network=onion&format=addresses")).text()
    assert sorted(listed.split()) == sorted([f"{ONION}:8333", "a" * 56 + ".onion:8333"])


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("network=tor", "invalid_network"),
        ("country=DEU", "invalid_country"),
        ("asn=hetzner", "invalid_asn"),
        ("version=new", "invalid_version"),
        ("services=FAST", "invalid_services"),
        ("sort=speed", "invalid_sort"),
        ("format=xml", "invalid_format"),
        ("limit=1001", "invalid_limit"),
        ("limit=0", "invalid_limit"),
        ("page=0", "invalid_page"),
        ("country=DE&country=US", "invalid_country"),
    ],
)
async def test_bad_node_filters_name_the_parameter(served: Client, query: str, code: str):
    response = await served.get(f"/api/nodes?{query}")
    assert response.status == 400
    assert (await response.json())["error"]["code"] == code


async def test_unknown_breakdown_lists_the_keys(served: Client):
    body = await (await served.get("/api/breakdown?by=city")).json()
    assert body["error"]["code"] == "invalid_by"
    assert (
        "network, country, asn, user_agent, version, services, height" in body["error"]["message"]
    )


async def test_breakdowns_in_metrics_only_when_asked(aiohttp_client, tmp_path, data_dir):
    write_snapshot(data_dir, TS, export_body(crawl()))
    for asked in (False, True):
        settings = Settings(
            data_dir=data_dir, state_dir=tmp_path / str(asked), metrics_breakdowns=asked
        )
        client = await aiohttp_client(create_app(settings))
        metrics = await scrape(client)
        by_country = {
            dict(labels)["country"]: value
            for (name, labels), value in metrics.items()
            if name == "crawldash_snapshot_nodes_by_country" and dict(labels)["network"]
        }
        counted = {"" if k is None else k: v for k, v in expected("country").items()}
        assert by_country == (counted if asked else {})
        await client.close()


def test_csv_records_are_what_the_csv_module_writes():
    nodes = {
        "203.0.113.5:8333": NodeRow(
            70016,
            '/Sat,oshi:"27"/',
            1,
            1033,
            900_000,
            "h\nost",
            None,
            "DE",
            52.5,
            -0.0,
            None,
            "AS1",
            "Org, Inc.",
        ),
        "[2001:db8::1]:8333": NodeRow(
            70015,
            None,
            2,
            0,
            899_999,
            None,
            "Köln",
            None,
            0.0,
            13.405,
            "Europe/Berlin",
            None,
            None,
        ),
    }
    catalog = NodeCatalog.build(nodes, {address: "ipv4" for address in nodes})
    lines = [catalog.csv_record(i) for i in range(len(catalog.addresses))]
    assert catalog.csv == b"".join(lines)
    for address, line in zip(catalog.addresses, lines, strict=True):
        expected = io.StringIO()
        values = [address, *msgspec.structs.astuple(nodes[address])]
        csv.writer(expected).writerow(["" if v is None else v for v in values])
        assert line.decode() == expected.getvalue()


async def test_a_query_asked_again_is_answered_without_a_new_search(
    served: Client, monkeypatch: pytest.MonkeyPatch
):
    searched: list[Any] = []
    search = NodeCatalog.matching_steps

    def counted(self: NodeCatalog, *args: Any) -> Any:
        searched.append(args)
        return search(self, *args)

    monkeypatch.setattr(NodeCatalog, "matching_steps", counted)
    first = await (await served.get("/api/nodes?country=de&services=p2p_v2&limit=2")).read()
    again = await (await served.get("/api/nodes?country=de&services=p2p_v2&limit=2")).read()
    assert again == first
    assert len(searched) == 1
    # The same filter, normalised: another page, another format, another spelling.
    second = await (await served.get("/api/nodes?country=DE&services=P2P_V2&page=2&limit=2")).json()
    listed = await (await served.get("/api/nodes?country=de&services=p2p_v2&format=csv")).text()
    assert len(searched) == 1
    wanted = sorted(f"{n[0]}:8333" for n in crawl() if n[9] == "DE" and n[5] & 2048)
    assert [r["address"] for r in second["results"]] == wanted[2:4]
    assert [line.split(",")[0] for line in listed.splitlines()[1:]] == wanted
    await served.get("/api/nodes?country=us")
    assert len(searched) == 2


async def test_kept_answers_follow_the_crawl_served(served: Client, data_dir):
    asked = "/api/nodes?country=de&format=csv"
    before = await served.get(asked)
    assert f"crawldash-nodes-{TS}.csv" in before.headers["Content-Disposition"]
    await watching(served)
    later = [row(f"203.0.113.{i}") for i in range(3)]
    for node in later:
        node[9] = "DE"
    write_snapshot(data_dir, TS + 600, export_body(later))
    await until_served(served, TS + 600)
    after = await served.get(asked)
    assert f"crawldash-nodes-{TS + 600}.csv" in after.headers["Content-Disposition"]
    addresses = [line.split(",")[0] for line in (await after.text()).splitlines()[1:]]
    assert addresses == [f"203.0.113.{i}:8333" for i in range(3)]
    page = await (await served.get("/api/nodes?country=de")).json()
    assert (page["timestamp"], page["count"]) == (TS + 600, 3)


async def test_kept_pages_link_to_where_they_were_asked(served: Client):
    links = []
    for host in ("a.example", "b.example:8080"):
        response = await served.get("/api/nodes?limit=10", headers={"Host": host})
        links.append(URL((await response.json())["next"]))
    assert [(link.host, link.explicit_port) for link in links] == [
        ("a.example", None),
        ("b.example", 8080),
    ]
