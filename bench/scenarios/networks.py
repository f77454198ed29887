"""Several networks in one process: the second network's status beside the first's, each
run for run with aiohttp's ceiling, and the memory a second, empty network adds."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.context import Bench, Running, emptied
from bench.load import free_port, rss_mib
from bench.rows import Measure, Requests, Row, Section, Server, Unit, fact
from bench.scenarios.endpoints import ceiling_command
from bench.servers import PY, paired, server, wait_history

SECOND = "second"  # the second network's name: served under /n/second/
EMPTY_NETWORK_LIMIT = 5.0  # MiB a second, empty network may add (issue 29)
SECOND_CRAWLS = 2  # the 15,000-node folder's newest crawls, hardlinked into the second's


def run(bench: Bench) -> list[Row]:
    config, rows = bench.config, list[Row]()
    second = emptied(config.root / "second-network")
    for path in sorted(bench.data.data15k.glob("[0-9]*.json"))[-SECOND_CRAWLS:]:
        os.link(path, second / path.name)
    state = bench.ready_state()
    ceiling_port = free_port()
    ceiling = f"http://127.0.0.1:{ceiling_port}/"
    with (
        networks(bench, state, ("main", bench.data.data15k), (SECOND, second)) as ours,
        server(ceiling_command(ceiling_port), ceiling, bench.log) as ceiling_process,
    ):
        wait_history(f"{ours.base}/n/{SECOND}")
        for name, prefix in (
            ("status, first network", ""),
            ("status, second network", "/n/second"),
        ):
            mine, theirs = paired(
                f"{ours.base}{prefix}/api/status",
                ours.pid,
                {},
                ceiling,
                ceiling_process.pid,
                config.pairs,
            )
            rows.append(Requests(name, Server.CRAWLDASH, tuple(mine), tuple(theirs)))
    empty = emptied(config.root / "empty-network")
    one = resident(bench, state, ("main", bench.data.data15k))
    two = resident(bench, state, ("main", bench.data.data15k), (SECOND, empty))
    rows.append(
        fact("RSS, one network (15,000 nodes), server + its child processes", one, Unit.MIB, 1)
    )
    rows.append(
        Measure(
            Section.TARGETS,
            "RSS added by a second, empty network (two starts, each once its history is complete)",
            (two - one,),
            Unit.MIB,
            1,
            limits=(EMPTY_NETWORK_LIMIT,),
        )
    )
    return rows


def resident(bench: Bench, state: Path, *folders: tuple[str, Path]) -> float:
    """RSS (MiB) of the server and its children once every network's history is complete."""
    with networks(bench, state, *folders) as running:
        for name, _ in folders:
            wait_history(f"{running.base}/n/{name}")
        return rss_mib(running.pid)


@contextmanager
def networks(bench: Bench, state: Path, *folders: tuple[str, Path]) -> Iterator[Running]:
    """crawldash serving each (name, folder) as a network, with its defaults otherwise."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    named = [f"--network={name}={folder}" for name, folder in folders]
    command = [PY, "-m", "crawldash", "serve", *named, "--state-dir", str(state)]
    with server([*command, "--port", str(port)], base + "/api/status", bench.log) as process:
        yield Running(base, process)
