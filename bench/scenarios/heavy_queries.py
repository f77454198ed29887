"""Heavy queries beside cheap ones: /api/status's latency on one connection while four
others send ``/api/nodes?q=<letter>&limit=1000`` (a letter matches most nodes, and a page
of a thousand is the most a request may ask for), or while eight others send
``/api/history?by=user_agent&match=<text>`` over the whole history, each text new (no
answer is kept for it), against /api/status alone. crawldash on core 1; both wrk processes
on core 0."""

from __future__ import annotations

import statistics
import subprocess
import time
from pathlib import Path

from bench.context import Bench
from bench.load import WRK_CORE, Sample, latency, wrk
from bench.rows import Measure, Row, Section, Shape, Unit
from bench.servers import wait_history

HEAVY_CONNECTIONS = 4
MATCH_CONNECTIONS = 8
P99_LIMIT = 10.0  # ms: /api/status's p99 under the heavy queries
SETTLE = 0.5  # seconds the heavy queries run before /api/status is measured
# One letter after another, so that no answer is the same twice in a row.
SCRIPT = """
local letters = "abcdefghijklmnopqrstuvwxyz"
local n = 0
request = function()
  n = n % #letters + 1
  return wrk.format(nil, "/api/nodes?q=" .. letters:sub(n, n) .. "&limit=1000")
end
"""
# A new text every request: each answer reads every crawl held (limit above any history).
MATCH_SCRIPT = """
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, "/api/history?by=user_agent&limit=100000&match=" .. string.format("%x", n))
end
"""


def run(bench: Bench) -> list[Row]:
    config = bench.config
    seconds = max(config.seconds, 2)
    script = config.root / "heavy_queries.lua"
    script.write_text(SCRIPT)
    matching = config.root / "heavy_history.lua"
    matching.write_text(MATCH_SCRIPT)
    alone: list[Sample] = []
    loaded: list[tuple[Sample, float]] = []
    matched: list[tuple[Sample, float]] = []
    with bench.crawldash(bench.ready_state()) as running:
        wait_history(running.base)
        status = running.base + "/api/status"
        for _ in range(config.runs):
            alone.append(wrk(status, running.pid, seconds, {}, connections=1))
            loaded.append(beside_heavy(running.base, running.pid, script, seconds))
            matched.append(
                beside_heavy(running.base, running.pid, matching, seconds, MATCH_CONNECTIONS)
            )
    under = [sample for sample, _ in loaded]
    beside_matches = [sample for sample, _ in matched]
    heavy_rps = statistics.median(rps for _, rps in loaded)
    return [
        Measure(
            Section.TARGETS,
            "/api/status alone, one connection: p50 / p99",
            (ms(alone, "p50"), ms(alone, "p99")),
            Unit.MS,
            2,
            Shape.SLASHED,
            details=f"{statistics.median(s.rps for s in alone):,.0f} requests/s",
        ),
        Measure(
            Section.TARGETS,
            f"/api/status, one connection, beside {HEAVY_CONNECTIONS} connections of "
            "/api/nodes?q=<letter>&limit=1000: p50 / p99",
            (ms(under, "p50"), ms(under, "p99")),
            Unit.MS,
            2,
            Shape.SLASHED,
            limits=(None, P99_LIMIT),
            details=f"{statistics.median(s.rps for s in under):,.0f} requests/s of "
            f"/api/status, {heavy_rps:,.0f} of the searches; 15,000 nodes",
        ),
        Measure(
            Section.TARGETS,
            f"/api/status, one connection, beside {MATCH_CONNECTIONS} connections of "
            "/api/history?by=user_agent&match=<new text>, the whole history: p50 / p99",
            (ms(beside_matches, "p50"), ms(beside_matches, "p99")),
            Unit.MS,
            2,
            Shape.SLASHED,
            limits=(None, P99_LIMIT),
            details=f"{statistics.median(s.rps for s in beside_matches):,.0f} requests/s of "
            f"/api/status, {statistics.median(rps for _, rps in matched):,.0f} of the "
            f"matches; {config.history_files:,} crawls",
        ),
    ]


def beside_heavy(
    base: str, pid: int, script: Path, seconds: int, connections: int = HEAVY_CONNECTIONS
) -> tuple[Sample, float]:
    """/api/status measured while wrk sends the heavy queries of ``script`` on
    ``connections``: its sample, and the heavy queries' requests per second."""
    command = ["taskset", "-c", WRK_CORE, "wrk", "-t1", f"-c{connections}"]
    command += [f"-d{seconds + 2 * SETTLE:.0f}s", "--latency", "--timeout", "30s"]
    command += ["-s", str(script), base + "/"]
    heavy = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(SETTLE)
        sample = wrk(base + "/api/status", pid, seconds, {}, connections=1)
        out, _ = heavy.communicate(timeout=seconds + 60)
    finally:
        if heavy.poll() is None:
            heavy.kill()
            heavy.wait()
    latency(out, "99%")  # the searches were answered: wrk's output has their latencies
    return sample, requests_per_second(out)


def requests_per_second(out: str) -> float:
    for line in out.splitlines():
        if line.startswith("Requests/sec:"):
            return float(line.split()[1])
    raise RuntimeError(f"wrk's output lacks Requests/sec:\n{out}")


def ms(samples: list[Sample], field: str) -> float:
    return float(statistics.median(getattr(sample, field) for sample in samples)) * 1000
