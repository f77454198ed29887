"""The application factory."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import time
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor

import msgspec
from aiohttp import web

from .events import EVENTS, Broadcaster
from .headers import add_cors_headers
from .history import HistoryStore
from .metrics import METRICS, Metrics, RequestStats, request_logger
from .openapi import build_openapi
from .page import PAGE, Page
from .refresh import Refresher
from .representation import represent
from .routes import setup_routes
from .settings import Settings
from .state import State
from .typedefs import OPENAPI, REFRESHER, SETTINGS, STATE, WATCHER
from .watcher import Watcher

log = logging.getLogger(__name__)


# Limits of the HTTP layer (aiohttp answers past them with a plain-text 400).
MAX_LINE_SIZE = 8190  # the request line, URL included
MAX_FIELD_SIZE = 8190  # one header
MAX_HEADERS = 64
BACKFILL_DELAY = 0.5  # seconds after start-up before older crawls are counted
STARTUP_COUNT_BYTES = 1_000_000  # of older crawl files counted before the server listens


def create_app(settings: Settings) -> web.Application:
    requests = RequestStats()
    app = web.Application(
        handler_args={
            "keepalive_timeout": settings.keepalive_timeout,
            "max_line_size": MAX_LINE_SIZE,
            "max_field_size": MAX_FIELD_SIZE,
            "max_headers": MAX_HEADERS,
            # No middleware: requests are counted by the access-log hook, which is cheaper.
            "access_log": logging.getLogger("aiohttp.access"),
            "access_log_class": request_logger(requests, write_lines=settings.access_log),
        },
    )
    app[SETTINGS] = settings
    app[STATE] = State(
        history_size=settings.history_size,
        stale_after=settings.stale_after,
        stuck_after=settings.stuck_after,
    )
    app[METRICS] = Metrics(app, requests)
    app[PAGE] = Page()
    app[EVENTS] = Broadcaster(
        app[STATE], max_subscribers=settings.max_subscribers, heartbeat=settings.heartbeat
    )
    app[OPENAPI] = represent(msgspec.json.encode(build_openapi()), time.time())
    requests.label_routes(setup_routes(app))
    if settings.cors_origins:
        app.on_response_prepare.append(add_cors_headers)
    app.cleanup_ctx.append(data_ctx)
    return app


async def data_ctx(app: web.Application) -> AsyncIterator[None]:
    """Load what is on disk, then keep it fresh in the background until shutdown."""
    settings, state = app[SETTINGS], app[STATE]
    store = HistoryStore.for_data_dir(settings.resolved_state_dir, settings.data_dir)
    refresher = Refresher(
        state, store, data_dir=settings.data_dir, max_file_size=settings.max_file_size
    )
    refresher.observers.append(app[METRICS].refresh.observe)
    await asyncio.to_thread(refresher.restore_history)
    try:
        # Older crawls are counted after the server listens, but for a few small ones.
        await refresher.refresh(count_bytes=STARTUP_COUNT_BYTES)
    except OSError as exc:
        log.error("cannot read the data folder %s: %s", settings.data_dir, exc)
    refresher.snapshot_loader = snapshot_loader()
    refresher.new_snapshot_loader = snapshot_loader
    watcher = Watcher(
        refresher,
        settings.data_dir,
        debounce_ms=settings.debounce_ms,
        force_polling=settings.force_polling,
    )
    app[REFRESHER], app[WATCHER] = refresher, watcher
    stop = asyncio.Event()
    tasks = [
        asyncio.create_task(watcher.run(stop), name="crawldash-watcher"),
        asyncio.create_task(_backfill(refresher), name="crawldash-backfill"),
        asyncio.create_task(_start_loader(refresher), name="crawldash-loader-start"),
    ]
    yield
    stop.set()
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    await refresher.flush()
    if refresher.snapshot_loader is not None:
        await asyncio.to_thread(refresher.snapshot_loader.shutdown, wait=True, cancel_futures=True)


LOADER_NICENESS = 10  # on a busy core the loader yields: answering comes first


def snapshot_loader() -> ProcessPoolExecutor:
    """One process that loads new snapshots, so that their decoding never holds this
    process's GIL while it answers requests. Spawned, not forked: this process has threads.
    Each load gets a fresh process (the next one is started as soon as one ends), so the
    memory a load needed is given back to the system at once."""
    return ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("spawn"),
        max_tasks_per_child=1,
        initializer=os.nice,
        initargs=(LOADER_NICENESS,),
    )


async def _start_loader(refresher: Refresher) -> None:
    """Start the loader process now, not when the next crawl arrives."""
    await asyncio.sleep(BACKFILL_DELAY)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(refresher.snapshot_loader, os.getpid)


async def _backfill(refresher: Refresher) -> None:
    await asyncio.sleep(BACKFILL_DELAY)  # let the server bind and answer first
    try:
        await refresher.backfill()
    except OSError as exc:  # the folder is missing: the watcher's refreshes count crawls later
        log.error("history backfill stopped: %s", exc)
