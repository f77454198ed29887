"""The network over time: the history by every key of the breakdowns, a client's share by
name and distinct nodes over windows, against crawls whose clients, countries and service
bits the test chose and counted itself; kept through pruning and restarts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from crawldash.app import NETWORKS, create_app
from crawldash.crawl.breakdown import breakdowns, networks_of
from crawldash.crawl.count import count_nodes
from crawldash.crawl.decode import decode_snapshot
from crawldash.demo.showcase import write_demo
from crawldash.live.answers import trends
from crawldash.settings.serve import Settings

from .conftest import (
    Client,
    ClientFactory,
    Serve,
    json_of,
    until_complete,
    until_served,
)
from .factories import ONION, export_body, row, write_snapshot
from .helpers import write_crawls

TS = 1_700_000_000
CRAWLS = 6
AGENTS = (
    "/Satoshi:27.0.0/",
    "/Satoshi:27.1.0(Knots:20240801)/",
    "/Satoshi:28.0.0/",
    "/btcd:0.24.2/",
    "/Satoshi:28.1.0/Knots:20250305/",
    None,
)
COUNTRIES = ("US", "DE", "US", "FR", None, "US", "DE")
SERVICES = (1 | 8 | 1024, 1 | 8 | 1024 | 2048, 0, 1 | 4 | 8 | 64 | 1024, 1 | 8 | 2048)
BITS = {0: "NETWORK", 2: "BLOOM", 3: "WITNESS", 6: "COMPACT_FILTERS", 10: "NETWORK_LIMITED"}
BITS[11] = "P2P_V2"


def crawl(index: int) -> list[list[Any]]:
    """Crawl ``index``: nodes come and go, and clients are upgraded, from crawl to crawl."""
    rows = []
    for i in range(3 * index, 30 + 5 * index):
        node = row(f"203.0.{i // 200}.{i % 200 + 1}", height=900_000 - (i % 9 == 0))
        node[3] = AGENTS[(i + index // 2) % len(AGENTS)]
        node[5] = SERVICES[i % len(SERVICES)]
        node[9] = COUNTRIES[i % len(COUNTRIES)]
        rows.append(node)
    rows.append(row(ONION, tor=True))  # no country
    return rows


def tally(rows: list[list[Any]], by: str) -> Counter[str | None]:
    """The test's own count of a crawl by ``by``: country, user_agent or services (by bit)."""
    counted: Counter[str | None] = Counter()
    for node in rows:
        if by == "country":
            counted[node[9]] += 1
        elif by == "user_agent":
            counted[node[3]] += 1
        else:
            names: list[str | None] = [n for bit, n in BITS.items() if node[5] >> bit & 1]
            counted.update(names or [None])
    return counted


def expected_counts(by: str, top: int) -> list[dict[str, int]]:
    """``counts`` of every crawl: the newest crawl's ``top`` values (ties by value), then
    unknown and, but for services, other."""
    newest = tally(crawl(CRAWLS - 1), by)
    ranked = sorted((-n, value) for value, n in newest.items() if value is not None)
    shown = [value for _, value in ranked[:top]]
    answers = []
    for index in range(CRAWLS):
        rows = crawl(index)
        counted = tally(rows, by)
        counts = {value: counted[value] for value in shown} | {"unknown": counted[None]}
        if by != "services":
            counts["other"] = len(rows) - sum(counted[value] for value in shown) - counted[None]
        answers.append(counts)
    return answers


def expected_unique(window: int) -> tuple[int, int]:
    """The crawls in ``(newest - window, newest]`` and their distinct addresses."""
    newest = TS + 600 * (CRAWLS - 1)
    inside = [i for i in range(CRAWLS) if TS + 600 * i > newest - window]
    addresses = {f"{node[0]}:{node[1]}" for i in inside for node in crawl(i)}
    return len(inside), len(addresses)


async def answers(client: Client) -> dict[str, Any]:
    """Every answer the test checks, as the API gives them."""
    asked = {
        "country": "/api/history?by=country&top=2&limit=100",
        "services": "/api/history?by=services&limit=100",
        "user_agent": "/api/history?by=user_agent&top=3&limit=100",
        "knots": "/api/history?by=user_agent&match=KNOTS&limit=100",
        **{f"unique {w}": f"/api/unique?window={w}" for w in (60, 601, 1800, 86_400)},
    }
    return {name: await json_of(client, path) for name, path in asked.items()}


def check(found: dict[str, Any]) -> None:
    """The API's answers against the test's own counts."""
    timestamps = [TS + 600 * i for i in range(CRAWLS)]
    for by, top in (("country", 2), ("services", 10), ("user_agent", 3)):
        points = found[by]
        assert [p["timestamp"] for p in points] == timestamps
        assert [p["reachable"] for p in points] == [len(crawl(i)) for i in range(CRAWLS)]
        assert [p["counts"] for p in points] == expected_counts(by, top), by
    assert list(found["country"][0]["counts"]) == ["US", "DE", "unknown", "other"]
    knots = [sum("knots" in (n[3] or "").lower() for n in crawl(i)) for i in range(CRAWLS)]
    assert [p["matched"] for p in found["knots"]] == knots
    assert all(knots)
    for window in (60, 601, 1800, 86_400):
        unique = found[f"unique {window}"]
        crawls, distinct = expected_unique(window)
        assert (unique["crawls"], unique["unique"]) == (crawls, distinct), window
        assert unique["window"] == window
        assert unique["to"] == timestamps[-1]
        assert unique["from"] == timestamps[-crawls]


async def test_the_network_over_time_survives_pruning_and_a_restart(serve: Serve, data_dir: Path):
    write_crawls(data_dir, crawl, CRAWLS, TS)
    client = await serve()
    await until_served(client, TS + 600 * (CRAWLS - 1))
    await until_complete(client)
    first = await answers(client)
    check(first)
    await client.close()
    for index in range(CRAWLS // 2):  # the crawler prunes its older files
        (data_dir / f"{TS + 600 * index}.json").unlink()
    client = await serve()
    await until_served(client, TS + 600 * (CRAWLS - 1))
    await until_complete(client)
    again = await answers(client)
    assert again == first  # the pruned crawls' counts come from the index
    check(again)


def test_a_crawl_counted_for_the_history_agrees_with_its_breakdown():
    """The counting of older crawls and the latest crawl's breakdowns use one set of value
    rules: a crawl counted either way gives the same numbers."""
    rows = [*crawl(3), row("198.51.100.7", height=900_100)]
    rows[0][5] = 1 << 20  # a bit without a name
    body = export_body(rows)
    counted = count_nodes(body)
    snapshot = decode_snapshot(body, TS)
    made = breakdowns(snapshot.nodes, snapshot.latest_height, networks_of(snapshot.nodes))
    for key, values in counted.tallies.items():
        assert values == dict(made[key]), key
    assert set(counted.tallies) == set(made) - {"network"}


async def test_the_newest_crawls_counts_are_its_breakdown(serve: Serve, data_dir: Path):
    write_crawls(data_dir, crawl, CRAWLS, TS)
    client = await serve()
    await until_served(client, TS + 600 * (CRAWLS - 1))
    for by in ("country", "asn", "user_agent", "version", "services", "height"):
        [point] = await json_of(client, f"/api/history?by={by}&top=50&limit=1")
        rows = (await json_of(client, f"/api/breakdown?by={by}&limit=1000"))["rows"]
        breakdown = {"unknown" if r["value"] is None else str(r["value"]): r["nodes"] for r in rows}
        assert {k: n for k, n in point["counts"].items() if n and k != "other"} == breakdown, by


async def test_values_missing_from_a_crawl_count_zero(serve: Serve, data_dir: Path):
    write_snapshot(data_dir, TS, export_body([row("203.0.113.1"), row("203.0.113.2")]))
    newest = [row("203.0.113.1"), row("203.0.113.3")]
    newest[1][9] = "JP"
    write_snapshot(data_dir, TS + 600, export_body(newest))
    client = await serve()
    await until_served(client, TS + 600)
    await until_complete(client)
    points = await json_of(client, "/api/history?by=country")
    assert [p["counts"] for p in points] == [
        {"JP": 0, "RU": 2, "unknown": 0, "other": 0},
        {"JP": 1, "RU": 1, "unknown": 0, "other": 0},
    ]
    for_one = await json_of(client, "/api/history?by=country&top=1&limit=1")
    assert for_one[0]["counts"] == {"JP": 1, "unknown": 0, "other": 1}


async def test_the_history_as_csv_in_every_shape(serve: Serve, data_dir: Path):
    write_crawls(data_dir, crawl, CRAWLS, TS)
    client = await serve()
    await until_served(client, TS + 600 * (CRAWLS - 1))
    await until_complete(client)
    for query, columns in [
        ("", []),
        ("&by=network", ["ipv4", "ipv6", "onion", "i2p", "cjdns"]),
        ("&by=country&top=2", ["US", "DE", "unknown", "other"]),
        ("&by=user_agent&match=knots", ["matched"]),
    ]:
        response = await client.get(f"/api/history?limit=100&format=csv{query}")
        assert response.status == 200
        assert response.content_type == "text/csv"
        assert "attachment; filename=" in response.headers["Content-Disposition"]
        lines = [line.split(",") for line in (await response.text()).splitlines()]
        assert lines[0] == ["timestamp", "reachable", *columns]
        as_json = await json_of(client, f"/api/history?limit=100{query}")
        assert len(lines) == 1 + len(as_json)
        for line, point in zip(lines[1:], as_json, strict=True):
            numbers = point.get("networks") or point.get("counts") or {}
            if "matched" in point:
                numbers = {"matched": point["matched"]}
            assert line == [str(point["timestamp"]), str(point["reachable"])] + [
                str(numbers[c]) for c in columns
            ]
    response = await client.get("/api/history?by=user_agent&top=50&format=csv")
    header = (await response.text()).splitlines()[0]
    assert '"/Satoshi:27.1.0(Knots:20240801)/"' not in header  # no comma: not quoted
    assert "/Satoshi:27.1.0(Knots:20240801)/" in header


async def test_answers_are_made_once_per_crawl(
    serve: Serve, data_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    """A repeated query is answered from what was made for it until the next crawl."""
    write_crawls(data_dir, crawl, CRAWLS, TS)
    client = await serve()
    await until_served(client, TS + 600 * (CRAWLS - 1))
    await until_complete(client)
    made: list[str] = []
    columns, matched = trends.columns, trends.matched

    def counting_columns(*args: Any) -> Any:
        made.append("columns")
        return columns(*args)

    def counting_matched(*args: Any) -> Any:
        made.append("matched")
        return matched(*args)

    monkeypatch.setattr(trends, "columns", counting_columns)
    monkeypatch.setattr(trends, "matched", counting_matched)
    for _ in range(5):
        for coding in ("gzip", "identity"):
            headers = {"Accept-Encoding": coding}
            for path in ("/api/history?by=country", "/api/history?by=user_agent&match=knots"):
                assert (await client.get(path, headers=headers)).status == 200
    assert made == ["columns", "matched"]
    compressed = await client.get("/api/history?by=country", headers={"Accept-Encoding": "gzip"})
    assert compressed.headers["Content-Encoding"] == "gzip"
    newest = TS + 600 * CRAWLS
    write_snapshot(data_dir, newest, export_body(crawl(CRAWLS)))
    await client.app[NETWORKS][0].refresher.refresh()
    await until_served(client, newest)
    points = await json_of(client, "/api/history?by=country")
    assert points[-1]["timestamp"] == newest
    assert made == ["columns", "matched", "columns"]


async def test_unique_follows_new_crawls_and_counts_no_crawl_before_any(
    serve: Serve, data_dir: Path
):
    client = await serve()
    empty = await json_of(client, "/api/unique?window=3600")
    assert empty == {"window": 3600, "from": None, "to": None, "crawls": 0, "unique": 0}
    write_crawls(data_dir, crawl, CRAWLS, TS)
    await client.app[NETWORKS][0].refresher.refresh()
    await until_served(client, TS + 600 * (CRAWLS - 1))
    await until_complete(client)
    day = await json_of(client, "/api/unique")  # a day, by default
    assert (day["crawls"], day["unique"]) == expected_unique(86_400)
    assert len(client.app[NETWORKS][0].state.presence) == CRAWLS


async def test_the_demos_pruned_crawls_count_as_their_files_would(
    aiohttp_client: ClientFactory, tmp_path: Path
):
    """``crawldash demo`` writes the counts of the crawls it prunes as crawldash would have
    counted their files: the same demo with every file kept gives the same history."""
    answers = []
    for keep_files in (2, 12):
        folder = tmp_path / str(keep_files)
        data_dir, state_dir = write_demo(
            folder, nodes=80, crawls=12, keep_files=keep_files, seed=5, end=TS
        )
        settings = Settings(data_dir=data_dir, state_dir=state_dir)
        client = await aiohttp_client(create_app(settings))
        await until_served(client, TS)
        await until_complete(client)
        keys = ("country", "asn", "user_agent", "version", "services", "height")
        answers.append([await json_of(client, f"/api/history?by={k}&top=50") for k in keys])
        await client.close()
    pruned, kept = answers
    assert pruned == kept
    assert all("counts" in point for points in kept for point in points)
