"""Block propagation and node latency, end to end: bitnodes' keys in a real redis-server,
written as ping.py and cache_inv.py write them; the bridge keeps them; Redis, the bridge
and crawldash restart; a bitnodes.io v1 client reads them back."""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
import redis

from crawldash.bridge.propagation import Collector
from crawldash.crawl.propagation import BlocksFile, cells, read_blocks, read_latency

from .helpers import answer, bridge, get, propagation_passes, stopped
from .process import PATIENCE, free_port, serving, wait_until
from .test_bridge import REDIS, redis_port, start_redis  # noqa: F401  (a fixture)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(REDIS is None, reason="redis-server (Debian redis-server) missing"),
]

INV_TTL = RTT_TTL = 10_800  # ping.conf's inv_ttl, cache_inv.conf's ttl
RTT_COUNT = 36
T0 = int(time.time() * 1000) - 3_600_000  # an hour ago, in ms: within --keep-days
BLOCK_A = "00000000000000000001" + "a" * 44
BLOCK_B = "00000000000000000002" + "B" * 44  # bitnodes writes lower case; any case is read
V4, V6, ONION = "203.0.113.5", "2001:db8::7", "a" * 56 + ".onion"
SILENT = "198.51.100.9"  # held by ping.py, never answers a ping
NONE_KEPT = BlocksFile(0, [])


def announce(client: redis.Redis, block: str, node: tuple[str, int], ms: int) -> None:
    """ping.py's sink(): one block inv from one node."""
    key = f"binv:{block}"
    pipe = client.pipeline()
    pipe.execute_command("ZADD", key, "LT", ms, f"{node[0]}-{node[1]}")  # type: ignore[no-untyped-call]
    pipe.expire(key, INV_TTL)
    pipe.execute()


def pong(client: redis.Redis, node: tuple[str, int], rtt: int) -> None:
    """cache_inv.py's cache_rtt(): one round-trip time, newest first."""
    key = f"rtt:{node[0]}-{node[1]}"
    pipe = client.pipeline()
    pipe.lpush(key, rtt)
    pipe.ltrim(key, 0, RTT_COUNT - 1)
    pipe.expire(key, RTT_TTL)
    pipe.execute()


def hold(client: redis.Redis, node: tuple[str, int]) -> None:
    """ping.py's Keepalive: the node it is connected to, in opendata."""
    row = [node[0], node[1], 70016, "/Satoshi:28.0.0/", int(time.time()), 1033]
    client.zadd("opendata", {json.dumps(row): int(time.time())})


def many_nodes(count: int) -> list[tuple[str, int]]:
    return [(f"10.0.{i // 250}.{i % 250 + 1}", 8333) for i in range(count)]


def fill(client: redis.Redis) -> dict[str, list[tuple[str, int]]]:
    """Two blocks' announcements as ping.py writes them; what each should keep, as
    ``[canonical address, ms]`` sorted as Redis sorts (by time, then member)."""
    # Over 128 members: Redis keeps A as a skiplist, which the bridge reads with DUMP; B,
    # a small set, it reads with ZRANGE.
    a_nodes = [(V6, 8333), (V4, 8333), (ONION, 8333), *many_nodes(200)]
    expected_a = []
    for i, node in enumerate(a_nodes):
        ms = T0 + (i * 7919) % 1009 * 13 + i % 3  # distinct times, not in order
        announce(client, BLOCK_A, node, ms + 900)
        announce(client, BLOCK_A, node, ms)  # LT: the earlier time wins
        announce(client, BLOCK_A, node, ms + 400)  # a later inv: ignored
        host = f"[{node[0]}]" if ":" in node[0] else node[0]
        expected_a.append((f"{host}:{node[1]}", ms))
    client.zadd(f"binv:{BLOCK_A}", {"not an address": T0 - 5})  # malformed: skipped
    expected_b = []
    for i, node in enumerate(many_nodes(7)):
        announce(client, BLOCK_B.lower(), node, T0 + 600_000 + 250 * i)
        expected_b.append((f"{node[0]}:{node[1]}", T0 + 600_000 + 250 * i))
    client.set("binv:" + "c" * 64, "a string, not a sorted set")  # wrong type: skipped
    client.set("rtt:192.0.2.1-8333", "not a list")  # wrong type: skipped
    return {BLOCK_A: sorted(expected_a, key=lambda e: (e[1], e[0])), BLOCK_B.lower(): expected_b}


def expected_stats(announced: list[tuple[str, int]]) -> dict[str, Any]:
    """bitnodes.io's stats, computed here: delays after the earliest, population standard
    deviation, percentiles by linear interpolation (statistics' inclusive method)."""
    times = sorted(ms for _, ms in announced)
    delays = [ms - times[0] for ms in times]
    deciles = statistics.quantiles(delays, n=10, method="inclusive")
    steps = [0, *statistics.quantiles(delays, n=20, method="inclusive"), delays[-1]]
    return {
        "head": [list(entry) for entry in announced[:10]],
        "min": 0,
        "max": delays[-1],
        "mean": pytest.approx(statistics.fmean(delays), abs=1e-3),
        "std": pytest.approx(statistics.pstdev(delays), abs=1e-3),
        "50%": pytest.approx(deciles[4], abs=1e-3),
        "90%": pytest.approx(deciles[8], abs=1e-3),
        "ecdf": [[round(delay), 5 * step] for step, delay in enumerate(steps)],
    }


def bridging(port: int, tmp: Path) -> AbstractContextManager[subprocess.Popen[str]]:
    return bridge(
        *("--redis", f"redis://127.0.0.1:{port}/0", "--out", str(tmp / "status.json")),
        *("--interval", "0.2", "--propagation-interval", "0.2"),
        *("--propagation-dir", str(tmp / "kept")),
    )


def cell_counts(kept: Path, address: str) -> int:
    latency = read_latency(kept)
    if latency is None or address not in latency.nodes:
        return 0
    return sum(count for _, count, _ in cells(latency.nodes[address]))


def walk(base: str) -> dict[str, Any]:
    """A bitnodes.io v1 client, written to the public shapes: every block's propagation,
    following ``next`` as the API gives it."""
    found, url = {}, f"{base}/api/v1/inv/?limit=1"
    while url:
        page = get(url)
        for row in page["results"]:
            found[row["inv_hash"]] = get(f"{base}/api/v1/inv/{row['inv_hash']}/")
        url = page["next"]
    return found


def away_from_a_bucket_edge() -> None:
    """The latency samples must fall in one 10-minute bucket: start well inside one."""
    if time.time() % 600 > 570:
        time.sleep(600 - time.time() % 600 + 1)


def kept_through_restarts(
    port: int, servers: list[subprocess.Popen[bytes]], tmp_path: Path
) -> tuple[float, dict[str, list[tuple[str, int]]]]:
    """The bridge keeps what bitnodes wrote, once, through its restart and a Redis that
    forgets and restarts (a new server appended to ``servers``); the time the latency was
    sampled at, and the announcements written."""
    client = redis.Redis(port=port)
    announced = fill(client)
    pong(client, (V6, 8333), 999)  # an older time, pushed before: only the newest is seen
    pong(client, (V6, 8333), 40)
    hold(client, (V6, 8333))
    hold(client, (SILENT, 8333))
    kept = tmp_path / "kept"
    with bridging(port, tmp_path) as first:
        wait_until(lambda: len((read_blocks(kept) or NONE_KEPT).blocks) == 2)
        wait_until(lambda: cell_counts(kept, f"[{V6}]:8333") == 1)
        sampled_at = time.time()
        # cache_inv renews the key's expiry: a later push moves it on, by more than the
        # bridge's slack once Redis's clock has moved on that far
        key = f"rtt:{V6}-8333"
        wait_until(lambda: client.pttl(key) < (RTT_TTL - 1.5) * 1000)
        pong(client, (V6, 8333), 61)
        propagation_passes(client)  # nothing is counted twice
        # Within one bucket the latency file is written only as the bridge stops.
        assert cell_counts(kept, f"[{V6}]:8333") == 1
        log = stopped(first)
    assert cell_counts(kept, f"[{V6}]:8333") == 2
    assert log.count("'binv:" + "c" * 64) == 1, log  # the wrong type, said once
    assert log.count("rtt:192.0.2.1-8333") == 1, log
    assert log.count("malformed members skipped") == 1, log

    client.flushall()  # Redis forgets; then it goes away and comes back empty
    servers[0].terminate()
    servers[0].wait(PATIENCE)
    servers.append(start_redis(port))
    with bridging(port, tmp_path) as second:
        propagation_passes(client)  # passes over an empty Redis keep what was kept
        assert len((read_blocks(kept) or NONE_KEPT).blocks) == 2
        assert cell_counts(kept, f"[{V6}]:8333") == 2
        stopped(second)
    return sampled_at, announced


def test_kept_propagation_and_latency_outlive_redis_and_restarts(tmp_path: Path):
    away_from_a_bucket_edge()
    port = free_port()
    servers = [start_redis(port)]
    try:
        sampled_at, announced = kept_through_restarts(port, servers, tmp_path)
    finally:
        for server in servers:
            server.terminate()
            server.wait(PATIENCE)
    kept = tmp_path / "kept"
    bucket = int(sampled_at) // 600 * 600
    data, state = tmp_path / "data", tmp_path / "state"
    data.mkdir()
    for _ in range(2):  # crawldash serves it, and again after a restart
        with serving(data, state, "--propagation-dir", str(kept)) as base:
            found = walk(base)
            assert list(found) == [BLOCK_B.lower(), BLOCK_A]  # newest first
            for block, body in found.items():
                assert body["inv_hash"] == block
                assert body["stats"] == expected_stats(announced[block])
            latency = get(f"{base}/api/v1/nodes/{V6}-8333/latency/")
            assert latency == get(f"{base}/api/v1/nodes/[{V6.upper()}]-8333/latency/")
            views = {"daily_latency": (144, 600), "weekly_latency": (168, 3600)}
            views["monthly_latency"] = (120, 21600)
            for view, (points, step) in views.items():
                series = latency[view]
                assert len(series) == points
                assert [p["t"] for p in series] == list(
                    range(series[0]["t"], series[0]["t"] + points * step, step)
                )
                by_time = {p["t"]: p["v"] for p in series}
                assert by_time[bucket - bucket % step] == round((40 + 61) / 2)
                assert sum(1 for p in series if p["v"] != 0) == 1
            silent = get(f"{base}/api/v1/nodes/{SILENT}-8333/latency/")
            assert {p["t"]: p["v"] for p in silent["daily_latency"]}[bucket] == 0  # held
            assert answer(f"{base}/api/v1/nodes/192.0.2.200-8333/latency/")[0] == 404
            code, error = answer(f"{base}/api/v1/inv/{'d' * 64}/")
            assert (code, error["error"]["code"]) == (404, "inv_not_found")


def test_announcements_gone_from_redis_are_forgotten(redis_port: int, tmp_path: Path):  # noqa: F811
    """bitnodes lets each binv: key expire; a peer may announce any number of hashes that
    are no block. What the bridge remembers of them stays as many as Redis holds."""
    client = redis.Redis(port=redis_port)
    collector = Collector(client, tmp_path, max_age_days=30, max_blocks=10)
    made_up = [f"{n:064x}" for n in range(300)]
    for block in made_up:
        announce(client, block, (V4, 8333), T0)
    collector.collect(time.time())
    assert len(collector._counts) == len(made_up)
    client.delete(*(f"binv:{block}" for block in made_up))  # expired
    announce(client, BLOCK_A, (V6, 8333), T0)
    collector.collect(time.time())
    assert set(collector._counts) == {BLOCK_A}
