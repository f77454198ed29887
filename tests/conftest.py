from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient, TestServer

from crawldash.app import NETWORKS, create_app
from crawldash.settings.serve import Settings

from .process import PATIENCE

Client = TestClient[web.Request, web.Application]
ClientFactory = Callable[..., Awaitable[Client]]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked slow first, in their files' order: run in parallel, the longest
    start at once and the many short ones fill the workers' ends, rather than one long
    test starting last and running alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def now() -> int:
    """This test's own now: a time taken when the module was imported would be ages old by
    the time a late test of a long run uses it, and crawls "just written" would be stale."""
    return int(time.time())


@pytest.fixture
def settings(tmp_path: Path, data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir, state_dir=tmp_path / "state", debounce_ms=50)


@pytest.fixture
async def client(aiohttp_client: ClientFactory, settings: Settings) -> Client:
    """A real server on a real socket, built from ``settings`` over ``data_dir``."""
    return await aiohttp_client(create_app(settings))


Serve = Callable[..., Awaitable[Client]]


@pytest.fixture
def serve(aiohttp_client: ClientFactory, settings: Settings) -> Serve:
    """Start a real server over ``data_dir`` as the test has filled it, on a real socket;
    keyword arguments replace options of ``settings`` (``serve(history_size=5)``)."""

    async def start(**options: Any) -> Client:
        return await aiohttp_client(create_app(replace(settings, **options)))

    return start


@asynccontextmanager
async def started(settings: Settings) -> AsyncIterator[Client]:
    """A real server built from ``settings``, on a real socket, for a fixture wider than
    ``aiohttp_client``'s single test: the tests of a module that only read one served
    history share it (``loop_scope="module"``, as in tests/test_v1.py)."""
    async with TestClient(TestServer(create_app(settings))) as client:
        yield client


async def json_of(client: Client, path: str, **headers: str) -> Any:
    """The JSON of the answer to ``path``, which must be a 200."""
    response = await client.get(path, headers=headers)
    assert response.status == 200, (path, response.status, await response.text())
    return await response.json()


async def patiently(client: Client, path: str, **options: Any) -> ClientResponse:
    """The answer to GET ``path``, asked again while it is a 503 with Retry-After, as a
    client that honours it would: a past crawl's load takes longer on a busy machine than
    the server waits for it before saying ``loader_busy``."""
    started = time.monotonic()
    while (response := await client.get(path, **options)).status == 503:
        assert "Retry-After" in response.headers, await response.text()
        if time.monotonic() - started > PATIENCE:
            break
        await asyncio.sleep(0.2)  # a test need not wait the seconds Retry-After says
    return response


async def until_complete(client: Client) -> None:
    """Wait until /api/status says the history is complete: every crawl has its point."""

    async def complete() -> bool:
        return bool((await json_of(client, "/api/status"))["history_complete"])

    await eventually(complete)


async def served_timestamp(client: Client) -> int | None:
    """The timestamp of the crawl ``/api/snapshot`` serves, once the rest of its answers
    are served too (a new crawl's plain snapshot is served ahead of the rest); None while
    there is none, or while a new crawl is served only in part. What the refresh takes in
    after that, ``until_served`` waits for."""
    if any(network.state.first is not None for network in client.app[NETWORKS]):
        return None
    response = await client.get("/api/snapshot")
    return (await response.json())["timestamp"] if response.status == 200 else None


async def until_served(client: Client, timestamp: int, within: float = PATIENCE) -> None:
    """Wait until the crawl named ``timestamp`` is served whole (``served_timestamp``) and
    the refresh that served it is over: it takes the crawl's history point, presence,
    profile changes and check evidence in after the snapshot, and the snapshot event is
    sent before them."""

    async def served() -> bool:
        return await served_timestamp(client) == timestamp and not refreshing(client)

    await eventually(served, within)


def refreshing(client: Client) -> bool:
    """True while a refresh of any network is under way (refreshes hold the lock)."""
    return any(network.refresher._lock.locked() for network in client.app[NETWORKS])


async def eventually(check: Callable[[], Awaitable[bool]], within: float = PATIENCE) -> float:
    """Wait until ``check`` passes; return the seconds it took. Fails the test on timeout."""
    started = time.monotonic()
    while not await check():
        if time.monotonic() - started > within:
            pytest.fail(f"condition not met within {within} s")
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def watching(client: Client) -> None:
    """Wait until the app's watcher sees changes, so that a test's writes are not missed."""

    async def ready() -> bool:
        return bool(client.app[NETWORKS][0].watcher.watching)

    await eventually(ready)
