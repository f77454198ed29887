"""One network as the application serves it: its state, its refresher and watcher, and the
handlers bound to them, built from its folder. ``app.py`` builds one per network and
routes them; what the networks share (the loader process, the counting processes, the
dashboard's files, the request counts) is built there once and handed in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import msgspec

from .archive.arriving import Target
from .archive.outcome import outcome_path
from .archive.view import ArchiveView
from .checknode.checker import LiveCheck, live_check_for
from .crawl.address import parse_address
from .crawl.decode import Rules
from .crawl.reached import sibling_crawl_dir
from .live.answers.propagation import Propagation
from .live.bodies import Representation, represent
from .live.loader.client import LoaderClient
from .live.loader.counters import Counters
from .live.refreshing.pairing import Pairing
from .live.refreshing.refresher import Refresher
from .live.refreshing.watcher import Watcher
from .live.snapshot.past_crawls import Archive, ArchivedSnapshot, load_archived
from .live.state import State
from .live.stores.index_files import HistoryStore, PresenceStore
from .ops.gauges import WatchedNetwork
from .ops.health import Health
from .routes import Table, route_table
from .settings.networks import NetworkFolder
from .settings.serve import Settings
from .web.events import Broadcaster
from .web.history import HistoryRoutes
from .web.latest import Latest
from .web.links import Links
from .web.map import MapRoutes
from .web.nodes import NodeRoutes
from .web.presence import Presences
from .web.schema.openapi import build_openapi
from .web.v1.checknode import CheckNode
from .web.v1.listings import V1
from .web.v1.propagation import V1Propagation


@dataclass(frozen=True)
class Shared:
    """What every network of one process uses: one loader process (its calls are one at a
    time), one pool of counting processes, and the links (with the public URL)."""

    loader: LoaderClient
    counters: Counters
    links: Links


@dataclass
class ServedNetwork:
    """A network's parts: ``prefix`` is ``/n/NAME``, under which ``routes`` are served."""

    name: str
    prefix: str
    state: State
    refresher: Refresher
    watcher: Watcher
    events: Broadcaster
    propagation: Propagation
    health: Health
    watched: WatchedNetwork
    handlers: Table
    live_check: LiveCheck | None = None  # POST /api/v1/checknode/, if --live-check names it
    archive: ArchiveView | None = None  # the Parquet archive, with --archive-dir


def build_network(settings: Settings, folder: NetworkFolder, shared: Shared) -> ServedNetwork:
    """Every part of ``folder``'s network; nothing is read or started yet. Its crawl folder
    is the one given, else bitnodes' beside its data folder; with the bridge's kept attempts
    (in its propagation folder) it is the evidence of ``/api/check``'s reason.

    Args:
        settings: the service's settings (limits, timeouts and the state folder).
        folder: the network's name and folders, and the nodes it watches.
        shared: what the networks of this process share.

    Returns:
        The network, its handlers keyed by their unprefixed path.
    """
    state = State(
        history_size=settings.history_size,
        stale_after=settings.stale_after,
        stuck_after=settings.stuck_after,
    )
    state_dir, data_dir, rules = settings.resolved_state_dir, folder.data_dir, Rules.of(settings)
    refresher = Refresher(
        state,
        HistoryStore.for_data_dir(state_dir, data_dir),
        PresenceStore.for_data_dir(state_dir, data_dir),
        shared.loader,
        data_dir=data_dir,
        rules=rules,
        status_file=folder.status_file,
        counters=shared.counters,
        pairing=Pairing(
            folder.crawl_dir or sibling_crawl_dir(data_dir),
            folder.propagation_dir,
            settings.max_file_size,
        ),
    )
    watcher = Watcher(
        refresher, data_dir, debounce_ms=settings.debounce_ms, force_polling=settings.force_polling
    )
    prefix = f"/n/{folder.name}"
    latest = Latest(state, _schemas(shared.links.public_url, prefix), settings.cache_max_age)
    events = Broadcaster(
        state,
        max_subscribers=settings.max_subscribers,
        heartbeat=settings.heartbeat,
        per_client=settings.max_subscribers_per_client,
        drain_timeout=settings.event_drain_timeout,
        trusted=settings.trusted_proxies,
        ipv6_prefix=settings.client_ipv6_prefix,
    )
    indexes = (refresher.saver, refresher.presence_saver)
    health = Health(state, watcher, indexes)
    propagation = Propagation(folder.propagation_dir)
    live_check = live_check_for(settings, folder)

    async def load_older(path: Path, timestamp: int) -> ArchivedSnapshot:
        return await shared.loader.run(load_archived, path, timestamp, rules)

    older = Archive(data_dir, load_older)
    archive = None
    if settings.archive_dir is not None:
        outcome = outcome_path(state_dir, folder.name)
        target = Target(settings.archive_dir, folder.name, outcome)
        older.kept = archive = ArchiveView(target, shared.loader.run)

    handlers = route_table(
        latest,
        HistoryRoutes(state, latest.until_next_crawl, max_bytes=settings.history_answers),
        NodeRoutes(state, latest.until_next_crawl, links=shared.links),
        Presences(state),
        V1(state, older, latest.until_next_crawl, links=shared.links),
        V1Propagation(propagation, links=shared.links),
        events,
        health,
        MapRoutes(state, latest.until_next_crawl),
        CheckNode(live_check, settings.trusted_proxies),
    )
    watches = tuple(parse_address(address) for address in folder.watches)
    watched = WatchedNetwork(
        folder.name,
        state,
        refresher.rejected,
        watcher,
        indexes,
        watches=watches,
        live_check=live_check,
        archive=archive,
    )
    refresher.observers.append(watched.refreshes.observe)
    return ServedNetwork(
        folder.name,
        prefix,
        state,
        refresher,
        watcher,
        events,
        propagation,
        health,
        watched,
        handlers,
        live_check,
        archive,
    )


def _schemas(public_url: str | None, prefix: str) -> tuple[Representation, Representation]:
    """The OpenAPI document as served at the root and under ``prefix``: their ``servers``."""
    made = time.time()
    at_root = build_openapi(public_url or "/")
    under_prefix = build_openapi((public_url or "") + prefix)
    return (
        represent(msgspec.json.encode(at_root), made),
        represent(msgspec.json.encode(under_prefix), made),
    )
