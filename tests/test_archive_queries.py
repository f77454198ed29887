"""The queries of docs/archive.md, taken from the document itself and run by DuckDB and by
ClickHouse's engine (chDB, in process) over an archive of real-shaped crawls, answer with
the same counts as crawldash's own /api/history, /api/history?by=user_agent&match=Knots
and /api/presence from a real server over a real socket."""

from __future__ import annotations

import asyncio
import csv
import io
import re
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import chdb
import duckdb
import pytest
import pytest_asyncio

from crawldash.crawl.decode import decode_snapshot
from crawldash.settings.serve import Settings
from tests.conftest import Client, json_of, started, until_complete, until_served
from tests.test_archive import END, run_archive, write_crawls

DOC = Path(__file__).resolve().parent.parent / "docs" / "archive.md"
QUERY = re.compile(r"<!-- query: (\w+) (duckdb|clickhouse) -->\n```sql\n(.*?)```", re.S)
GLOB = "archive/network=main/*/*.parquet"
NAMES = ("reachable_per_day", "knots_per_week", "node_uptime", "countries_month")
INTERVAL = 6 * 3600  # 80 crawls: three weeks, two months' ends maybe
# Every test only reads the one served history of the module's fixture, in its event loop.
pytestmark = pytest.mark.asyncio(loop_scope="module")


class Archived(NamedTuple):
    client: Client
    archive: Path
    data_dir: Path


def documented() -> dict[tuple[str, str], str]:
    queries = {(name, engine): sql for name, engine, sql in QUERY.findall(DOC.read_text())}
    assert sorted(queries) == sorted((n, e) for n in NAMES for e in ("duckdb", "clickhouse"))
    return queries


def run(engine: str, sql: str, archive: Path, node: tuple[str, int]) -> list[tuple[str, ...]]:
    """The query's rows, every value as text, the document's paths and node made ours."""
    assert GLOB in sql
    assert sql.count("'203.0.113.5'") == sql.count("8333") <= 1
    sql = sql.replace(GLOB, f"{archive}/network=main/*/*.parquet")
    sql = sql.replace("'203.0.113.5'", f"'{node[0]}'").replace("8333", str(node[1]))
    if engine == "duckdb":
        return [tuple(map(str, row)) for row in duckdb.execute(sql).fetchall()]
    text = chdb.query(sql, "CSV").bytes().decode()  # type: ignore[no-untyped-call]
    return [tuple(row) for row in csv.reader(io.StringIO(text))]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def archived(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Archived]:
    """One served history of the crawls and their archive, shared by this module's tests,
    which only read them (in the module's event loop: pytestmark)."""
    folder = tmp_path_factory.mktemp("queries")
    data_dir, archive = folder / "data", folder / "archive"
    write_crawls(data_dir, crawls=80, interval=INTERVAL, nodes=150)
    run_archive(data_dir, archive)
    settings = Settings(
        data_dir=data_dir, state_dir=folder / "state", debounce_ms=50, history_size=1000
    )
    async with started(settings) as client:
        await until_served(client, END)
        await until_complete(client)
        yield Archived(client, archive, data_dir)


def day(timestamp: int) -> date:
    return datetime.fromtimestamp(timestamp, UTC).date()


async def test_reachable_per_day_and_knots_per_week(archived: Archived) -> None:
    client, archive, _ = archived
    history = await json_of(client, "/api/history?limit=1000")
    assert len(history) == 80
    per_day: dict[date, list[int]] = defaultdict(list)
    for point in history:
        per_day[day(point["timestamp"])].append(point["reachable"])
    expected_days = [
        (str(d), str(len(n)), str(min(n)), str(max(n))) for d, n in sorted(per_day.items())
    ]
    knots = await json_of(client, "/api/history?limit=1000&by=user_agent&match=Knots")
    weeks: dict[date, list[int]] = defaultdict(lambda: [0, 0, 0])
    for point in knots:
        monday = day(point["timestamp"]) - timedelta(days=day(point["timestamp"]).weekday())
        weeks[monday][0] += 1
        weeks[monday][1] += point["matched"]
        weeks[monday][2] += point["reachable"]
    assert len(weeks) >= 3
    assert all(week[1] for week in weeks.values())  # Knots is there
    expected_weeks = [(str(w), *map(str, v)) for w, v in sorted(weeks.items())]
    for engine in ("duckdb", "clickhouse"):
        queries = documented()
        rows = run(engine, queries["reachable_per_day", engine], archive, ("", 0))
        assert [row[:4] for row in rows] == expected_days, engine
        for row, (_, reachable) in zip(rows, sorted(per_day.items()), strict=True):
            assert float(row[4]) == pytest.approx(sum(reachable) / len(reachable), abs=0.06)
        rows = run(engine, queries["knots_per_week", engine], archive, ("", 0))
        assert [row[:4] for row in rows] == expected_weeks, engine


def times_seen(data_dir: Path) -> dict[str, int]:
    """The crawls that listed each node, from the files."""
    seen: dict[str, int] = defaultdict(int)
    for path in data_dir.glob("*.json"):
        for key in decode_snapshot(path.read_bytes(), 0).nodes:
            seen[key] += 1
    return seen


async def test_a_nodes_uptime(archived: Archived) -> None:
    client, archive, data_dir = archived
    seen = await asyncio.to_thread(times_seen, data_dir)
    key = next(k for k, n in sorted(seen.items()) if 20 < n < 70)  # neither always nor never
    host, _, port = key.rpartition(":")
    presence = await json_of(client, f"/api/presence?address={key}&limit=1000")
    present = sum(run["crawls"] for run in presence if run["present"])
    assert present == seen[key]
    crawls = sum(run["crawls"] for run in presence)
    for engine in ("duckdb", "clickhouse"):
        sql = documented()["node_uptime", engine]
        ((total, got, percent),) = run(engine, sql, archive, (host.strip("[]"), int(port)))
        assert (int(total), int(got)) == (crawls, present), engine
        assert float(percent) == pytest.approx(100 * present / crawls, abs=0.006)


async def test_countries_gained_and_lost_in_the_newest_month(
    archived: Archived,
) -> None:
    client, archive, _ = archived
    points = await json_of(client, "/api/history?limit=1000&by=country&top=50")
    newest = points[-1]
    month = day(newest["timestamp"]).replace(day=1)
    first = next(p for p in points if day(p["timestamp"]).replace(day=1) == month)["counts"]
    last = newest["counts"]  # the API's values: the newest crawl's top 50, in every point
    shown = set(last) - {"other"}
    assert len(shown) < 50  # so every country of the newest crawl is shown
    checked = 0
    for engine in ("duckdb", "clickhouse"):
        rows = run(engine, documented()["countries_month", engine], archive, ("", 0))
        assert len(rows) == 10
        changes = []
        for country, at_first, at_last, change in rows:
            if country in shown:  # else the newest crawl has none: the API has no value
                assert (int(at_first), int(at_last)) == (first[country], last[country])
                checked += 1
            assert int(change) == int(at_last) - int(at_first)
            changes.append(abs(int(change)))
        assert changes == sorted(changes, reverse=True), engine
        biggest = max(abs(last[c] - first[c]) for c in shown)
        assert changes[0] >= biggest, engine
    assert checked >= 10
