"""crawldash's endpoints under wrk, each beside aiohttp's ceiling run for run; with, from
the same server, its cold start's history, its memory and an older snapshot's fetch."""

from __future__ import annotations

import json
import statistics
import time
import urllib.error
from dataclasses import dataclass

from bench.context import Bench, emptied
from bench.load import free_port, pss_mib, rss_mib
from bench.propagation_data import BLOCKS, LATENCY_NODES, write_kept
from bench.rows import Requests, Row, Server, Unit, fact
from bench.servers import HERE, PY, Ask, Target, get, measure, paired, server, wait_history

CACHED_FETCHES = 20
# Targets: bitnodes.io's most asked data is a lookup of a body made once, so it is served
# near the framework's ceiling; a node's latency is a 10 KB body, hence the lower share.
CHECK_FLOOR = 0.8  # /api/check, its reason included, against the ceiling (issue 41)
INV_FLOOR = 0.8
LATENCY_FLOOR = 0.7
# A filtered node list of the newest crawl is asked for over and over by a public instance's
# visitors: answered from what was kept for the crawl (issue 45).
NODES_FLOOR = 0.5


@dataclass(frozen=True)
class Endpoint:
    name: str
    path: str
    headers: dict[str, str]
    naive_too: bool = True  # the naive server has it
    paired: bool = True  # measured run for run beside aiohttp's ceiling
    floor: float | None = None  # the target: the least share of the ceiling's req/s


def endpoints(hit: str, etag: str, block: str | None = None) -> list[Endpoint]:
    """The endpoints measured; those of block propagation and latency when ``block``, a
    kept block's hash, is given (the server then serves bench.propagation_data's files)."""
    host, _, port = hit.rpartition(":")
    node = f"{host.strip('[]')}-{port}"
    revalidate = {"If-None-Match": etag}
    cells = [
        Endpoint(
            "snapshot (identity)", "/api/snapshot", {"Accept-Encoding": "identity"}, paired=False
        ),
        Endpoint("snapshot (gzip)", "/api/snapshot", {"Accept-Encoding": "gzip"}, paired=False),
        Endpoint("status", "/api/status", {}),
        Endpoint("history?limit=144", "/api/history?limit=144", {}),
        Endpoint(
            "history?limit=144 (gzip)",
            "/api/history?limit=144",
            {"Accept-Encoding": "gzip"},
            naive_too=False,
        ),
        Endpoint(
            "history?by=country&limit=144 (gzip)",
            "/api/history?by=country&limit=144",
            {"Accept-Encoding": "gzip"},
            naive_too=False,
        ),
        Endpoint(
            "history?by=user_agent&match=Knots&limit=144",
            "/api/history?by=user_agent&match=Knots&limit=144",
            {},
            naive_too=False,
        ),
        Endpoint(
            "unique?window=2592000 (cached)", "/api/unique?window=2592000", {}, naive_too=False
        ),
        Endpoint("check hit", f"/api/check?address={hit}", {}, floor=CHECK_FLOOR),
        Endpoint("check miss", "/api/check?address=203.0.113.254:8333", {}, floor=CHECK_FLOOR),
        Endpoint("304 revalidation", "/api/snapshot", revalidate, naive_too=False),
        Endpoint("breakdown?by=country", "/api/breakdown?by=country", {}, naive_too=False),
        Endpoint(
            "nodes?country=DE&services=P2P_V2",
            "/api/nodes?country=DE&services=P2P_V2",
            {},
            naive_too=False,
            floor=NODES_FLOOR,
        ),
        Endpoint(
            "nodes?country=DE&services=P2P_V2&format=csv",
            "/api/nodes?country=DE&services=P2P_V2&format=csv",
            {},
            naive_too=False,
            floor=NODES_FLOOR,
        ),
        Endpoint(
            "nodes?q=satoshi:27",
            "/api/nodes?q=satoshi:27",
            {},
            naive_too=False,
            floor=NODES_FLOOR,
        ),
        Endpoint("presence?limit=144", f"/api/presence?address={hit}", {}, naive_too=False),
        Endpoint("changes", "/api/changes", {}, naive_too=False),
        Endpoint("v1 node status", f"/api/v1/nodes/{node}/", {}, naive_too=False),
        Endpoint(
            "v1 snapshots/latest/ (304 revalidation)",
            "/api/v1/snapshots/latest/",
            revalidate,
            naive_too=False,
        ),
    ]
    if block is not None:
        cells += [
            Endpoint(
                f"v1 inv/<hash>/ ({BLOCKS:,} blocks kept)",
                f"/api/v1/inv/{block}/",
                {},
                naive_too=False,
                floor=INV_FLOOR,
            ),
            Endpoint(
                f"v1 nodes/<node>/latency/ ({LATENCY_NODES:,} nodes kept)",
                f"/api/v1/nodes/{node}/latency/",
                {},
                naive_too=False,
                floor=LATENCY_FLOOR,
            ),
        ]
    return cells


def ceiling_command(port: int) -> list[str]:
    return [PY, str(HERE / "ceiling_server.py"), str(port)]


def run(bench: Bench) -> list[Row]:
    """From a cold start (no state index): the history's completion, memory, every
    endpoint, memory again, then an older snapshot through the v1 route."""
    config, rows = bench.config, list[Row]()
    ceiling_port = free_port()
    ceiling = f"http://127.0.0.1:{ceiling_port}"
    kept = emptied(config.root / "propagation")
    with (
        bench.crawldash(bench.fresh_state(), "--propagation-dir", str(kept)) as ours,
        server(ceiling_command(ceiling_port), ceiling + "/", bench.log) as ceiling_process,
    ):
        rows.append(fact("history complete after start (cold)", wait_history(ours.base), Unit.S))
        history = f"{bench.data.history_files:,} history points"
        rows.append(
            fact(
                f"RSS (server + its child processes), 15,000 nodes + {history}",
                rss_mib(ours.pid),
                Unit.MIB,
                1,
            )
        )
        rows.append(
            fact("PSS (the same, shared pages counted once)", pss_mib(ours.pid), Unit.MIB, 1)
        )
        headers, body = get(ours.base + "/api/snapshot", {"Accept-Encoding": "identity"})
        bench.keep_snapshot(headers["ETag"], body)
        block = write_kept(kept, bench.hit(), int(time.time()))
        wait_for(f"{ours.base}/api/v1/inv/{block}/")
        cells = endpoints(bench.hit(), headers["ETag"], block)
        for cell in cells:
            if not cell.paired:
                url = ours.base + cell.path
                samples = measure(url, ours.pid, cell.headers, config.runs, config.seconds)
                rows.append(Requests(cell.name, Server.CRAWLDASH, tuple(samples)))
        paired_cells = [cell for cell in cells if cell.paired]
        pairings = paired(
            Target(ours.base, ours.pid),
            Target(ceiling, ceiling_process.pid),
            [Ask(cell.path, cell.headers) for cell in paired_cells],
            config.pairs,
        )
        for cell, (mine, theirs) in zip(paired_cells, pairings, strict=True):
            rows.append(
                Requests(cell.name, Server.CRAWLDASH, tuple(mine), tuple(theirs), floor=cell.floor)
            )
        rows.append(
            fact(
                "RSS, the same, after the request runs above (32 clients of the snapshot)",
                rss_mib(ours.pid),
                Unit.MIB,
                1,
            )
        )
        rows += older_snapshot(ours.base)
    bench.state_made()
    return rows


def wait_for(url: str, seconds: float = 30.0) -> None:
    """Until ``url`` answers 200: crawldash takes in the kept files on its next look."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            get(url)
            return
        except urllib.error.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def older_snapshot(base: str) -> list[Row]:
    """The crawl before the newest (15,000 nodes), through the v1 route: its first request
    decodes it in the loader process; later ones are answered from the archive."""
    listed = json.loads(get(base + "/api/v1/snapshots/?limit=2")[1])["results"]
    url = str(listed[1]["url"])
    gzip_ = {"Accept-Encoding": "gzip"}
    started = time.monotonic()
    get(url, gzip_)
    first = time.monotonic() - started
    cached = []
    for _ in range(CACHED_FETCHES):
        started = time.monotonic()
        get(url, gzip_)
        cached.append(time.monotonic() - started)
    return [
        fact(
            "older 15,000-node snapshot via /api/v1/snapshots/<timestamp>/ (gzip): first request",
            first * 1000,
            Unit.MS,
            0,
        ),
        fact(
            f"the same, cached: median of {CACHED_FETCHES} requests (one client)",
            statistics.median(cached) * 1000,
            Unit.MS,
        ),
    ]
