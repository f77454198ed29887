"""The application factory: it builds the state, the loader process, the refresher, the
watcher and the bound handlers; ``cleanup_ctx`` only starts and stops them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import msgspec
from aiohttp import web

from .crawl.decode import Rules
from .live.bodies import represent
from .live.loading.archive import Archive, ArchivedSnapshot, load_archived
from .live.loading.client import LoaderClient
from .live.loading.counters import Counters
from .live.memory.index_files import HistoryStore, PresenceStore
from .live.memory.propagation import Propagation
from .live.refreshing.refresher import Refresher
from .live.refreshing.watcher import Watcher
from .live.state import State
from .ops.access_log import AccessLines, request_logger
from .ops.health import Health
from .ops.metrics import Metrics, RequestStats
from .routes import add_routes, route_table
from .settings import Settings
from .web.api import Api
from .web.cors import Cors
from .web.dashboard import Dashboard
from .web.events import Broadcaster
from .web.network import Network
from .web.openapi import build_openapi
from .web.presence import Presences
from .web.v1 import V1
from .web.v1_propagation import V1Propagation

log = logging.getLogger(__name__)

STATE = web.AppKey("state", State)
REFRESHER = web.AppKey("refresher", Refresher)
WATCHER = web.AppKey("watcher", Watcher)
LOADER = web.AppKey("loader", LoaderClient)
EVENTS = web.AppKey("events", Broadcaster)
PROPAGATION = web.AppKey("propagation", Propagation)

# Limits of the HTTP layer (aiohttp answers past them with a plain-text 400).
MAX_LINE_SIZE = 8190  # the request line, URL included
MAX_FIELD_SIZE = 8190  # one header
MAX_HEADERS = 64
BACKFILL_DELAY = 0.5  # seconds after start-up before older crawls are counted
STARTUP_COUNT_BYTES = 1_000_000  # of older crawl files counted before the server listens
PROPAGATION_TICK = 0.5  # seconds between looks at the kept propagation files
STATUS_POLL_SECONDS = 0.5  # the status file is looked at this often, apart from any load


def create_app(settings: Settings, loader: LoaderClient | None = None) -> web.Application:
    """The whole service for ``settings``; nothing is read or started until it runs but
    ``loader``, if given (the command line starts it first: ``live/head_start.py``)."""
    requests = RequestStats()
    access_lines = AccessLines() if settings.access_log else None
    app = web.Application(
        handler_args={
            "keepalive_timeout": settings.keepalive_timeout,
            "max_line_size": MAX_LINE_SIZE,
            "max_field_size": MAX_FIELD_SIZE,
            "max_headers": MAX_HEADERS,
            # No middleware: requests are counted by the access-log hook, which is cheaper.
            "access_log": logging.getLogger("aiohttp.access"),
            "access_log_class": request_logger(requests, access_lines),
        },
    )
    state = State(
        history_size=settings.history_size,
        stale_after=settings.stale_after,
        stuck_after=settings.stuck_after,
    )
    loader = loader or LoaderClient(timeout=settings.load_timeout)
    state_dir, data_dir = settings.resolved_state_dir, settings.data_dir
    rules = Rules.of(settings)
    refresher = Refresher(
        state,
        HistoryStore.for_data_dir(state_dir, data_dir),
        PresenceStore.for_data_dir(state_dir, data_dir),
        loader,
        data_dir=settings.data_dir,
        rules=rules,
        status_file=settings.status_file,
        counters=Counters(),
        max_clock_skew=settings.max_clock_skew,
    )
    watcher = Watcher(
        refresher,
        settings.data_dir,
        debounce_ms=settings.debounce_ms,
        force_polling=settings.force_polling,
    )
    metrics = Metrics(
        state,
        refresher.rejected,
        watcher,
        (refresher.saver, refresher.presence_saver),
        requests,
        breakdowns=settings.metrics_breakdowns,
    )
    refresher.observers.append(metrics.refresh.observe)
    events = Broadcaster(
        state, max_subscribers=settings.max_subscribers, heartbeat=settings.heartbeat
    )
    openapi = represent(msgspec.json.encode(build_openapi()), time.time())
    api = Api(state, openapi, settings.cache_max_age)
    cors = Cors(settings.cors_origins) if settings.cors_origins else None
    health = Health(state, watcher, (refresher.saver, refresher.presence_saver))
    network = Network(state, api.until_next_crawl)
    presences = Presences(state)

    async def load_older(path: Path, timestamp: int) -> ArchivedSnapshot:
        return await loader.run(load_archived, path, timestamp, rules)

    v1 = V1(state, Archive(data_dir, load_older), api.until_next_crawl)
    propagation = Propagation(settings.propagation_dir)
    app[PROPAGATION] = propagation
    table = route_table(
        api,
        network,
        presences,
        v1,
        V1Propagation(propagation),
        events,
        Dashboard(),
        health,
        metrics,
    )
    requests.label_routes(add_routes(app, table, cors))
    if cors is not None:
        app.on_response_prepare.append(cors.add_headers)
    app[STATE], app[REFRESHER], app[WATCHER], app[LOADER], app[EVENTS] = (
        state,
        refresher,
        watcher,
        loader,
        events,
    )
    app.cleanup_ctx.append(keep_fresh)
    if access_lines is not None:
        app.on_cleanup.append(lambda _: _flushed(access_lines))
    app.on_shutdown.append(events.end_streams)  # so that the server stops at once
    return app


async def keep_fresh(app: web.Application) -> AsyncIterator[None]:
    """Load what is on disk, then keep it fresh in the background until shutdown."""
    refresher, watcher, loader = app[REFRESHER], app[WATCHER], app[LOADER]
    await asyncio.to_thread(refresher.restore_history)
    if refresher.data_dir.is_dir():  # if not, the watcher says so and waits for it
        try:
            # Older crawls are counted after the server listens, but for a few small ones.
            await refresher.refresh(count_bytes=STARTUP_COUNT_BYTES)
        except OSError as exc:
            log.error("cannot read the data folder %s: %s", refresher.data_dir, exc)
    loader.start()
    stop = asyncio.Event()
    await _look_at_propagation(app[PROPAGATION])
    tasks = [
        asyncio.create_task(_keep_propagation(app[PROPAGATION]), name="crawldash-propagation"),
        asyncio.create_task(watcher.run(stop), name="crawldash-watcher"),
        asyncio.create_task(_later(refresher.keep_counting), name="crawldash-counting"),
        asyncio.create_task(_later(loader.warm_up), name="crawldash-loader-start"),
        asyncio.create_task(_every(STATUS_POLL_SECONDS, refresher.poll_status), name="status"),
    ]
    yield
    stop.set()
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    if refresher.counters is not None:
        refresher.counters.stop()
    await refresher.saver.close()
    await refresher.presence_saver.close()
    await loader.close()


async def _flushed(lines: AccessLines) -> None:
    lines.flush()


async def _every(seconds: float, work: Callable[[], Awaitable[None]]) -> None:
    """``work`` every ``seconds``, until cancelled; a failure is logged, and tried again."""
    while True:
        await asyncio.sleep(seconds)
        try:
            await work()
        except OSError as exc:
            log.warning("%s failed: %s", getattr(work, "__name__", "a periodic task"), exc)


async def _later(work: Callable[[], Awaitable[None]]) -> None:
    """``work``, once the server has had time to bind and answer first."""
    await asyncio.sleep(BACKFILL_DELAY)
    await work()


async def _look_at_propagation(propagation: Propagation) -> None:
    """Take in the kept propagation files if they changed (read off the loop)."""
    loaded = await asyncio.to_thread(propagation.look)
    if loaded is not None:
        propagation.take(loaded)


async def _keep_propagation(propagation: Propagation) -> None:
    """A stat of the two kept files per tick: they change once a bridge pass."""
    while propagation.folder is not None:
        await asyncio.sleep(PROPAGATION_TICK)
        try:
            await _look_at_propagation(propagation)
        except Exception as exc:  # never let a bad file end the task
            log.warning("looking at the propagation folder failed: %r", exc)
