"""bench/polling.py: how far apart the endpoints' switches to a crawl were, from what the
asking saw."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bench import polling
from bench.polling import Endpoint, Switches, field


def test_the_gap_is_the_spread_of_first_answers_and_the_proven_gap_what_older_ones_show():
    # a named the crawl 0.200 s after the write; b at 0.210 s, though still asked about an
    # older crawl at 0.195 s: the switch of b may have come before a's, no gap is proven.
    together = Switches({"a": 0.200, "b": 0.210}, ("a", "b"), {"a": 0.190, "b": 0.195})
    assert together.gap == pytest.approx(0.010)
    assert together.proven_gap == 0.0
    # b still answered about an older crawl when asked 0.030 s after a had named the new one
    apart = Switches({"a": 0.200, "b": 0.240}, ("a", "b"), {"a": 0.190, "b": 0.230})
    assert apart.proven_gap == pytest.approx(0.030)
    never = Switches({"a": 0.200, "b": None}, ("a", "b"), {"a": 0.190, "b": 5.0})
    assert never.gap is None
    assert never.proven_gap is None


async def test_once_one_endpoint_names_the_crawl_the_rest_are_asked_at_once(
    aiohttp_server: Callable[[web.Application], Awaitable[TestServer]],
    monkeypatch: pytest.MonkeyPatch,
):
    """``b`` is first asked before the switch; ``a`` names the crawl a moment later. With
    a pause far longer than the test, ``b`` is asked again at once on ``a``'s sighting."""
    monkeypatch.setattr(polling, "PAUSE", 60.0)
    asked_b = 0

    async def a(request: web.Request) -> web.Response:
        await asyncio.sleep(0.2)
        return web.json_response({"t": 2})

    async def b(request: web.Request) -> web.Response:
        nonlocal asked_b
        asked_b += 1
        return web.json_response({"t": 1 if asked_b == 1 else 2})

    app = web.Application()
    app.router.add_get("/a", a)
    app.router.add_get("/b", b)
    server = await aiohttp_server(app)
    endpoints = [Endpoint(name, f"/{name}", field("t")) for name in ("a", "b")]
    base = str(server.make_url("")).rstrip("/")
    found = await polling._switches(base, endpoints, 2, time.monotonic(), 30.0)
    assert asked_b == 2
    assert found.gap is not None
    assert found.gap < 30.0  # not a pause of 60 s
    assert found.before["b"] < found.seconds["a"] < found.seconds["b"]  # type: ignore[operator]
