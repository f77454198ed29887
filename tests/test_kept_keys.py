"""Answers kept by what a client asked hold the asking too: the raw query string (and the
Accept-Encoding) a client may make up and pad is kept with each answer, so the bytes the
answers may hold bound their keys as well as their bodies; an answer with no body of its
own (a filter that matches nothing, a slice of the history) is not free to keep."""

from __future__ import annotations

import pytest

from crawldash.app import NETWORKS
from crawldash.web import node_answers

from .conftest import Serve, until_served
from .factories import export_body, rows, write_snapshot

TS = 1_700_000_000
PAD = 4096  # characters of a made-up parameter in each query
BUDGET = 64 * 1024  # bytes of answers kept


def padded(n: int) -> str:
    return f"pad={n:08d}" + "x" * PAD


async def test_node_answers_count_the_query_strings_they_are_kept_by(
    serve: Serve, data_dir, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(node_answers, "MAX_BYTES", BUDGET)
    write_snapshot(data_dir, TS, export_body(rows(20)))
    client = await serve()
    await until_served(client, TS)
    routes = client.app[NETWORKS][0].handlers["/api/nodes"].__self__  # type: ignore[union-attr]
    for n in range(40):
        response = await client.get(f"/api/nodes?format=addresses&country=ZZ&{padded(n)}")
        assert response.status == 200
        assert await response.read() == b""  # no node matches: an answer of no bytes
        assert len(routes.kept) * PAD <= BUDGET, n
        assert routes.kept.bytes <= BUDGET
    assert len(routes.kept) > 1  # kept within the budget, not refused


async def test_history_answers_count_the_query_strings_they_are_kept_by(serve: Serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(20)))
    client = await serve(history_answers=BUDGET)
    await until_served(client, TS)
    routes = client.app[NETWORKS][0].handlers["/api/history"].__self__  # type: ignore[union-attr]
    kept = routes._history_answers  # half the budget: the other half is the trends'
    for n in range(40):
        response = await client.get(f"/api/history?limit=1&{padded(n)}")
        assert response.status == 200
        assert len(kept) * PAD <= BUDGET // 2, n
        assert kept.bytes <= BUDGET // 2
    assert len(kept) > 1
