"""The application factory."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from aiohttp import web

from .history import HistoryStore
from .refresh import Refresher
from .routes import setup_routes
from .settings import Settings
from .state import State
from .typedefs import REFRESHER, SETTINGS, STATE, WATCHER
from .watcher import Watcher

log = logging.getLogger(__name__)


def create_app(settings: Settings) -> web.Application:
    app = web.Application()
    app[SETTINGS] = settings
    app[STATE] = State(history_size=settings.history_size, stale_after=settings.stale_after)
    setup_routes(app)
    app.cleanup_ctx.append(data_ctx)
    return app


async def data_ctx(app: web.Application) -> AsyncIterator[None]:
    """Load what is on disk, then keep it fresh in the background until shutdown."""
    settings, state = app[SETTINGS], app[STATE]
    store = HistoryStore.for_data_dir(settings.resolved_state_dir, settings.data_dir)
    refresher = Refresher(
        state, store, data_dir=settings.data_dir, max_file_size=settings.max_file_size
    )
    await asyncio.to_thread(refresher.restore_history)
    try:
        await refresher.refresh()
    except OSError as exc:
        log.error("cannot read the data folder %s: %s", settings.data_dir, exc)
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
    ]
    yield
    stop.set()
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    await refresher.flush()


async def _backfill(refresher: Refresher) -> None:
    try:
        await refresher.backfill()
    except OSError as exc:  # the folder is missing: the watcher's refreshes count crawls later
        log.error("history backfill stopped: %s", exc)
