"""The leaderboard (Peer Index) of the 15,000-node crawl: what a build costs per crawl, in
this process on the crawl as the loader makes it, with the served history's presence and a
latency kept for every IPv4/IPv6 node over 30 days (as bitnodes' ping.py times them all);
and its answers beside aiohttp's ceiling, run for run (a request picks rows encoded once
per crawl)."""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable

from bench.context import Bench
from bench.load import free_port
from bench.rows import Measure, Requests, Row, Section, Server, Shape, Unit
from bench.scenarios.endpoints import ceiling_command
from bench.servers import Ask, Target, get, paired, server, wait_history
from crawldash.crawl.decode import Rules
from crawldash.crawl.propagation import LatencyFile, compacted, pack
from crawldash.live.answers.leaderboard import RANKED, Leaderboard
from crawldash.live.answers.propagation import Propagation
from crawldash.live.snapshot.prepared import PreparedSnapshot, load_snapshot
from crawldash.live.stores.index_files import PresenceStore
from crawldash.live.stores.presence import Presence

BUILDS = 5  # builds timed, each of a new latency file (the cost when it changed) and not
MONTH = 4320  # ten-minute buckets in 30 days, the latency the bridge keeps
ASKS = (
    "/api/v1/nodes/leaderboard/?limit=100",
    "/api/v1/nodes/leaderboard/?limit=100&page=50",
    "/api/v1/nodes/leaderboard/?limit=10&q=satoshi:27",
)


class _Served:
    """The state a build reads: the crawl, its presence, the listeners it joins."""

    def __init__(self, snapshot: PreparedSnapshot, presence: Presence) -> None:
        self.snapshot, self.presence = snapshot, presence
        self.listeners: list[Callable[[str], None]] = []


def run(bench: Bench) -> list[Row]:
    rows: list[Row] = list(build_costs(bench))
    ceiling_port = free_port()
    ceiling = f"http://127.0.0.1:{ceiling_port}"
    with (
        bench.crawldash(bench.ready_state()) as ours,
        server(ceiling_command(ceiling_port), ceiling + "/", bench.log) as ceiling_process,
    ):
        wait_history(ours.base)
        top = get(ours.base + ASKS[0])[1]  # the board built, as a page's first ask does
        node = top.split(b'"node":"', 1)[1].split(b'"', 1)[0].decode()
        host, port = node.rpartition(":")[0].strip("[]"), node.rpartition(":")[2]
        asks = [*ASKS, f"/api/v1/nodes/leaderboard/{host}-{port}/"]
        for path in asks:
            get(ours.base + path)
        pairings = paired(
            Target(ours.base, ours.pid),
            Target(ceiling, ceiling_process.pid),
            [Ask(path, {}) for path in asks],
            bench.config.pairs,
        )
    names = ("leaderboard, 100 rows", "leaderboard, page 50", "leaderboard?q=", "node ranking")
    for name, (mine, theirs) in zip(names, pairings, strict=True):
        rows.append(Requests(name, Server.CRAWLDASH, tuple(mine), tuple(theirs)))
    return rows


def build_costs(bench: Bench) -> list[Measure]:
    """A build's seconds (gathering on the event loop, the rest in its thread), median and
    worst of BUILDS: with a new latency file each time, and with the latency means kept."""
    folder = bench.data.data15k
    newest = max(folder.glob("1*.json"), key=lambda path: int(path.stem))
    snapshot = load_snapshot(newest, Rules(10**9))
    presence = PresenceStore.for_data_dir(bench.ready_state(), folder).load()
    served = _Served(snapshot, presence)
    networks = snapshot.catalog.networks
    ranked = [
        address
        for address, code in zip(snapshot.catalog.addresses, networks.codes, strict=True)
        if networks.values[code] in RANKED
    ]
    fresh, kept = [], []
    for turn in range(BUILDS):
        propagation = Propagation(None)
        propagation.latency = latency_of(ranked, snapshot.timestamp // 600, turn)
        board = Leaderboard(served, propagation)
        fresh.append(timed(board, snapshot))
        served.snapshot = snapshot  # the same crawl again: a new board of it
        board.board = None
        kept.append(timed(board, snapshot))
    details = f"{len(ranked):,} ranked of {snapshot.total_nodes:,}; {len(presence):,} crawls held"
    return [
        Measure(
            Section.FRESHNESS,
            "leaderboard build per crawl, a new latency file (every ranked node's 30 days), "
            "median / worst",
            (statistics.median(fresh), max(fresh)),
            Unit.MS,
            0,
            Shape.SLASHED,
            details=details,
        ),
        Measure(
            Section.FRESHNESS,
            "leaderboard build per crawl, latency means kept from the crawl before, median / worst",
            (statistics.median(kept), max(kept)),
            Unit.MS,
            0,
            Shape.SLASHED,
            details=details,
        ),
    ]


def timed(board: Leaderboard, snapshot: PreparedSnapshot) -> float:
    started = time.perf_counter()
    asyncio.run(board._build(snapshot))
    return (time.perf_counter() - started) * 1000


def latency_of(addresses: list[str], now: int, seed: int) -> LatencyFile:
    """What the bridge keeps of ``addresses`` over 30 days: a cell every ten minutes,
    compacted into hours and six hours as it compacts them (one of a few typical times
    each: the cells are made once per time)."""
    rng = random.Random(seed)
    kinds = []
    for typical in range(40, 1000, 60):
        cells = {bucket: (1, typical) for bucket in range(now - MONTH + 1, now + 1)}
        kinds.append(pack(compacted(pack(cells), now)))
    return LatencyFile(now, {address: rng.choice(kinds) for address in addresses}, {}, b"")
