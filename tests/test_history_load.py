"""Heavy history answers beside cheap requests (issue 40, case 6): an answer by value or
matching a text reads every crawl asked for, so it is made in steps and cheap requests are
answered between two; and the answers kept stay within the bytes ``--history-answers``
allows, however many distinct queries are asked."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from crawldash.app import NETWORKS
from crawldash.live.answers import trends
from crawldash.live.stores.history import HistoryEntry, Kept
from crawldash.live.stores.index_files import HistoryStore
from crawldash.live.stores.tallies import Values
from crawldash.settings.serve import Settings

from .conftest import Client, Serve, until_served
from .factories import export_body, rows, write_snapshot

TS = 1_700_000_000
INTERVAL = 600
AGENTS = [f"/Satoshi:{major}.{minor}.0/" for major in range(20, 28) for minor in range(3)]
ASNS = [f"AS{n}" for n in range(60)]


def write_history(data_dir: Path, state_dir: Path, crawls: int) -> int:
    """An index of ``crawls`` older crawls counted by value (their files gone, as after
    pruning), and the newest crawl's file; the newest's timestamp."""
    values, entries = Values(), []
    for i in range(crawls):
        agents = [(agent, 10 + (i + n) % 7) for n, agent in enumerate(AGENTS)]
        asns = [(asn, 5 + (i * n) % 11) for n, asn in enumerate(ASNS)]
        packed = values.pack({"user_agent": agents, "asn": asns})
        networks = (500, 0, 0, 0, 0)
        entries.append(HistoryEntry(TS + INTERVAL * i, 500, 0, 0, networks, 900_000, packed))
    store = HistoryStore.for_data_dir(state_dir, data_dir)
    store.path.parent.mkdir(parents=True, exist_ok=True)
    store.save(Kept(entries, values.copy()))
    newest = TS + INTERVAL * crawls
    write_snapshot(data_dir, newest, export_body(rows(20)))
    return newest


async def started(serve: Serve, settings: Settings, crawls: int, **options: Any) -> Client:
    assert settings.state_dir is not None
    newest = write_history(settings.data_dir, settings.state_dir, crawls)
    client = await serve(**options)
    await until_served(client, newest)
    return client


async def ok(client: Client, path: str) -> bytes:
    response = await client.get(path)
    assert response.status == 200, await response.text()
    return await response.read()


BOUND = 256 * 1024  # bytes of answers kept: a few dozen of the answers below


async def test_answers_kept_stay_within_their_bytes_after_many_distinct_queries(
    serve: Serve, settings: Settings
):
    client = await started(serve, settings, 400, history_answers=BOUND)
    network = client.app[NETWORKS][0]
    routes = network.handlers["/api/history"].__self__  # type: ignore[union-attr]
    kept = network.state.trends.answers
    held = []
    for n in range(120):
        for query in (
            f"by=user_agent&limit=400&match={n:x}",
            f"by=asn&top={1 + n % 50}&limit={200 + n}&format=csv",
            f"by=user_agent&limit={n + 1}",
        ):
            await ok(client, f"/api/history?{query}")
        held.append(routes._history_answers.bytes + kept.bytes)
        assert held[-1] <= BOUND, (n, held[-1])
    assert max(held) > BOUND // 2  # the budget was used, not answers dropped at once
    assert len(kept) > 1
    assert len(routes._history_answers) > 1
    again = await ok(client, "/api/history?by=user_agent&limit=400&match=77")
    assert again == await ok(client, "/api/history?by=user_agent&limit=400&match=77")


@pytest.mark.parametrize("path", ["by=user_agent&match=sat", "by=asn&top=50&format=csv"])
async def test_cheap_requests_are_answered_while_a_heavy_history_answer_is_made(
    serve: Serve, settings: Settings, monkeypatch: pytest.MonkeyPatch, path: str
):
    crawls = 4000
    # Small steps: a heavy answer of many of them, whatever the machine's speed.
    monkeypatch.setattr(trends, "CRAWLS_PER_STEP", 16, raising=False)
    client = await started(serve, settings, crawls)
    await ok(client, "/api/status")
    await ok(client, "/api/history?limit=10")
    heavy = asyncio.create_task(ok(client, f"/api/history?limit={crawls}&{path}"))
    cheap = 0
    while not heavy.done():
        await ok(client, "/api/status")
        await ok(client, "/api/history?limit=10")  # kept: no turn behind the heavy one
        cheap += 1
    body = await heavy
    assert body.count(b"\n" if "csv" in path else b'"matched"') >= crawls
    # Made at once, the heavy answer holds the loop from its start to its end: a cheap
    # request sent beside it is answered before it or after it, once or twice at most.
    assert cheap >= 10, cheap
