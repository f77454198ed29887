"""The network over time: the history by value at full size in its own process
(``python -m bench.studies.trends``: its index on disk, the memory loading it adds); and
``/api/unique`` over a month of crawls, the server CPU of its first answer after each new
crawl (what follows is cached: the endpoints scenario measures that beside the ceiling)."""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import msgspec

from bench import data
from bench.config import REPO, Config
from bench.context import Bench
from bench.rows import Measure, Row, Section, Shape, Unit
from bench.servers import PY, get, wait_history, wait_whole

WINDOW = 2_592_000  # 30 days: 4,320 crawls of 10 minutes
UNIQUE_LIMIT = 50.0  # ms of server CPU for the first answer after a crawl
SETTLE = 1.0  # seconds after a crawl is served, for its presence to be set (in slices)
NEW_CRAWLS = 3  # crawls written, each followed by a first request (config.later has 4 to spare)


def run(bench: Bench) -> list[Row]:
    out = subprocess.run(
        [PY, "-m", "bench.studies.trends", "--json", str(bench.config.presence_crawls)],
        check=True,
        capture_output=True,
        cwd=REPO,
    ).stdout
    rows: list[Row] = list(msgspec.json.decode(out, type=list[Measure]))
    return [*rows, unique_first(bench)]


def unique_first(bench: Bench) -> Measure:
    """For each of a few new crawls: the server's CPU (its event loop's thread, from
    schedstat's nanoseconds) for the first /api/unique?window=30 days after it."""
    config = bench.config
    url = f"/api/unique?window={WINDOW}"
    spent: list[float] = []
    crawls = unique = 0
    with bench.crawldash(bench.ready_state()) as running:
        wait_history(running.base)
        for timestamp, body in bench.take(NEW_CRAWLS):
            data.write_crawl(bench.data.data15k, timestamp, body)
            wait_whole(running.base, timestamp, config.wait_limit)
            cpu, answer = first_answer_about(running.base + url, running.pid, timestamp, config)
            spent.append(cpu)
            crawls, unique = answer["crawls"], answer["unique"]
    return Measure(
        Section.TARGETS,
        f"unique?window={WINDOW} over {crawls:,} crawls of 15,000 nodes: server CPU of the "
        "first request after a new crawl, median / worst",
        (statistics.median(spent), max(spent)),
        Unit.MS,
        1,
        Shape.SLASHED,
        limits=(UNIQUE_LIMIT, UNIQUE_LIMIT),
        details=f"{len(spent)} crawls; {unique:,} distinct addresses; cached after",
    )


def first_answer_about(
    url: str, pid: int, timestamp: int, config: Config
) -> tuple[float, dict[str, Any]]:
    """The server CPU (ms) of the first answer of ``url`` whose window ends at the crawl
    ``timestamp``, and that answer. The crawl's presence is set in slices after its history
    point, so on a busy machine an answer SETTLE seconds later may still end at the crawl
    before: such answers are not what is measured, and are asked again."""
    started = time.monotonic()
    while True:
        time.sleep(SETTLE)
        before = cpu_ns(pid)
        answer = json.loads(get(url)[1])
        if answer["to"] == timestamp:
            return (cpu_ns(pid) - before) / 1e6, answer
        if time.monotonic() - started > config.wait_limit:
            raise RuntimeError(f"the presence lacks crawl {timestamp}: {answer}")


def cpu_ns(pid: int) -> int:
    """Nanoseconds the process's main thread (the event loop's) has run on a CPU."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
