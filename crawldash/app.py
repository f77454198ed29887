"""The application factory: it builds each network's state, refresher, watcher and bound
handlers (``served_network.py``), what they share, and the routes; ``cleanup_ctx`` only
starts and stops them."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

from .archive import LOADER_PRELOAD
from .archive.view import LOOK_EVERY, ArchiveView, archiving_loads
from .live.answers.propagation import Propagation
from .live.loader.client import LoaderClient
from .live.loader.counters import Counters
from .ops.access_log import AccessLines, request_logger
from .ops.metrics import Metrics, RequestSeries, RequestStats
from .ops.repeats import Repeats
from .routes import Table, add_routes, service_routes
from .served_network import ServedNetwork, Shared, build_network
from .settings.serve import Settings
from .web.cors import Cors
from .web.dashboard import Dashboard
from .web.links import Links
from .web.networks import Networks

log = logging.getLogger(__name__)

NETWORKS = web.AppKey("networks", list[ServedNetwork])
LOADER = web.AppKey("loader", LoaderClient)
COUNTERS = web.AppKey("counters", Counters)

# Limits of the HTTP layer (aiohttp answers past them with a plain-text 400).
MAX_LINE_SIZE = 8190  # the request line, URL included
MAX_FIELD_SIZE = 8190  # one header
MAX_HEADERS = 64
BACKFILL_DELAY = 0.5  # seconds after start-up before older crawls are counted
STARTUP_COUNT_BYTES = 1_000_000  # of older crawl files counted before the server listens
PROPAGATION_TICK = 0.5  # seconds between looks at the kept propagation files
STATUS_POLL_SECONDS = 0.5  # the status file is looked at this often, apart from any load
FULL_COLLECTION_EVERY = 3600.0  # seconds between two collections of all that is frozen
_last_full_collection = [float("-inf")]  # when the last was (time.monotonic())


def create_app(settings: Settings, loader: LoaderClient | None = None) -> web.Application:
    """The whole service for ``settings``; nothing is read or started until it runs but
    ``loader``, if given (the command line starts it first: ``live/loader/head_start.py``)."""
    folders = settings.folders
    requests = RequestStats(folders[0].name)
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
    loader = loader or LoaderClient(timeout=settings.load_timeout)
    shared = Shared(loader, Counters(), Links(settings.public_url))
    networks = [build_network(settings, folder, shared) for folder in folders]
    archives = {n.refresher.data_dir: n.archive.target for n in networks if n.archive}
    if archives:  # each new crawl is archived by the load that decodes it
        loader.instead = archiving_loads(archives)
        loader.preload = LOADER_PRELOAD
    for network in networks:
        network.refresher.observers.append(_settle_heap)
    cors = Cors(settings.cors_origins) if settings.cors_origins else None
    checked = frozenset(network.name for network in networks if network.live_check is not None)
    listing = Networks([(network.name, network.state) for network in networks], checked)
    dashboard = Dashboard()

    def metrics(names: frozenset[str] | None) -> Metrics:
        watched = [n.watched for n in networks if names is None or n.name in names]
        return Metrics(watched, RequestSeries(requests, names), settings.metrics_breakdowns)

    def table(network: ServedNetwork, names: frozenset[str] | None) -> Table:
        shown = metrics(names).handle
        return {
            **network.handlers,
            **service_routes(dashboard.index, dashboard.static, listing.listing, shown),
        }

    tables = [("", table(networks[0], None))]
    tables += [(n.prefix, table(n, frozenset({n.name}))) for n in networks]
    requests.label_routes(add_routes(app, tables, listing.unknown, cors))
    if cors is not None:
        app.on_response_prepare.append(cors.add_headers)
    for network in networks:
        app.on_shutdown.append(network.events.end_streams)  # so that the server stops at once
    app[NETWORKS], app[LOADER], app[COUNTERS] = networks, loader, shared.counters
    app.cleanup_ctx.append(keep_fresh)
    if access_lines is not None:
        app.on_cleanup.append(lambda _: _flushed(access_lines))
    return app


async def keep_fresh(app: web.Application) -> AsyncIterator[None]:
    """Load what is on disk, then keep every network fresh in the background until
    shutdown. The first network's newest crawl is loaded first: it may have a head start."""
    networks, loader = app[NETWORKS], app[LOADER]
    await asyncio.gather(*(asyncio.to_thread(n.refresher.restore_history) for n in networks))
    for network in networks:
        await _first_refresh(network)
    loader.start()
    stop = asyncio.Event()
    tasks = [asyncio.create_task(_later(loader.warm_up), name="crawldash-loader-start")]
    for network in networks:
        tasks += await _keep_network_fresh(network, stop)
    yield
    stop.set()
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    app[COUNTERS].stop()
    for network in networks:
        await network.refresher.saver.close()
        await network.refresher.presence_saver.close()
    await loader.close()
    gc.unfreeze()  # what was frozen is the collector's again: the app's garbage can go


async def _first_refresh(network: ServedNetwork) -> None:
    refresher = network.refresher
    if refresher.data_dir.is_dir():  # if not, the watcher says so and waits for it
        try:
            # Older crawls are counted after the server listens, but for a few small ones.
            await refresher.refresh(count_bytes=STARTUP_COUNT_BYTES)
        except OSError as exc:
            log.error("cannot read the data folder %s: %s", refresher.data_dir, exc)


async def _keep_network_fresh(
    network: ServedNetwork, stop: asyncio.Event
) -> list[asyncio.Task[None]]:
    """The tasks that keep one network fresh: its watcher, its counting of older crawls,
    its status file's poll and its propagation files' look."""
    refresher, name = network.refresher, network.name
    await _look_at_propagation(network.propagation)
    archive = [] if network.archive is None else [_keep_looking(network.archive)]
    return [
        *(asyncio.create_task(look, name=f"{name}-archive") for look in archive),
        asyncio.create_task(_keep_propagation(network.propagation), name=f"{name}-propagation"),
        asyncio.create_task(network.watcher.run(stop), name=f"{name}-watcher"),
        asyncio.create_task(_later(refresher.keep_counting), name=f"{name}-counting"),
        asyncio.create_task(
            _every(STATUS_POLL_SECONDS, refresher.poll_status), name=f"{name}-status"
        ),
    ]


def _settle_heap(_seconds: float) -> None:
    """After a refresh, what the state keeps is long-lived: what was made since the last
    refresh is collected now, then what survives is frozen, so that the collector's full
    passes, which would otherwise walk all of it in the middle of some request, skip it.
    Every FULL_COLLECTION_EVERY seconds it is all unfrozen first, so that a cycle that
    died among what was frozen (a request under way then) is collected too, not kept: a
    pass over all of it holds the event loop for tens of milliseconds with a long history,
    which at every refresh would be in the p99 of every poll while crawls load."""
    now = time.monotonic()
    if now - _last_full_collection[0] >= FULL_COLLECTION_EVERY:
        _last_full_collection[0] = now
        gc.unfreeze()
    gc.collect()
    gc.freeze()


async def _flushed(lines: AccessLines) -> None:
    lines.flush()


async def _every(seconds: float, work: Callable[[], Awaitable[None]]) -> None:
    """``work`` every ``seconds``, until cancelled; a failure is tried again, and logged
    once per cause and 10 seconds while it lasts."""
    name, repeats = getattr(work, "__name__", "a periodic task"), Repeats(log)
    while True:
        await asyncio.sleep(seconds)
        try:
            await work()
        except OSError as exc:
            repeats.warn(f"{type(exc).__name__}:{exc.errno}", "%s failed: %s", name, exc)


async def _keep_looking(archive: ArchiveView) -> None:
    """Look at the archive's folders now, then every LOOK_EVERY seconds (in a thread)."""
    while True:
        await asyncio.to_thread(archive.look)
        await asyncio.sleep(LOOK_EVERY)


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
