"""Several networks in one process: the second network's status beside the first's, each
run for run with aiohttp's ceiling, and the memory a second, empty network adds."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.context import Bench, Running, emptied
from bench.load import free_port, pss_mib
from bench.rows import Measure, Requests, Row, Section, Server, Unit, fact
from bench.scenarios.endpoints import ceiling_command
from bench.servers import PY, Ask, Target, paired, server, wait_history

SECOND = "second"  # the second network's name: served under /n/second/
EMPTY_NETWORK_LIMIT = 5.0  # MiB a second, empty network may add (issue 29)
SECOND_CRAWLS = 2  # the 15,000-node folder's newest crawls, hardlinked into the second's
STARTS = 3  # of each kind, for the memory rows
SETTLE = 3.0  # seconds after the history is complete before memory is read


def run(bench: Bench) -> list[Row]:
    config, rows = bench.config, list[Row]()
    second = emptied(config.root / "second-network")
    for path in sorted(bench.data.data15k.glob("[0-9]*.json"))[-SECOND_CRAWLS:]:
        os.link(path, second / path.name)
    state = bench.ready_state()
    ceiling_port = free_port()
    ceiling = f"http://127.0.0.1:{ceiling_port}"
    with (
        networks(bench, state, ("main", bench.data.data15k), (SECOND, second)) as ours,
        server(ceiling_command(ceiling_port), ceiling + "/", bench.log) as ceiling_process,
    ):
        wait_history(f"{ours.base}/n/{SECOND}")
        named = {"status, first network": "", f"status, {SECOND} network": f"/n/{SECOND}"}
        pairings = paired(
            Target(ours.base, ours.pid),
            Target(ceiling, ceiling_process.pid),
            [Ask(f"{prefix}/api/status", {}) for prefix in named.values()],
            config.pairs,
        )
        for name, (mine, theirs) in zip(named, pairings, strict=True):
            rows.append(Requests(name, Server.CRAWLDASH, tuple(mine), tuple(theirs)))
    empty = emptied(config.root / "empty-network")
    one_network, two_networks = [], []
    for _ in range(STARTS):  # alternately: a machine's page cache and allocator drift
        one_network.append(settled_pss(bench, state, ("main", bench.data.data15k)))
        two_networks.append(
            settled_pss(bench, state, ("main", bench.data.data15k), (SECOND, empty))
        )
    one, two = statistics.median(one_network), statistics.median(two_networks)
    rows.append(
        fact(
            f"PSS, one network (15,000 nodes), server + its child processes, median of {STARTS}",
            one,
            Unit.MIB,
            1,
        )
    )
    rows.append(
        Measure(
            Section.TARGETS,
            f"PSS added by a second, empty network (median of {STARTS} starts of each, "
            "alternately, each settled after its history is complete)",
            (two - one,),
            Unit.MIB,
            1,
            limits=(EMPTY_NETWORK_LIMIT,),
            details="one network: "
            + ", ".join(f"{v:.1f}" for v in one_network)
            + " MiB; two: "
            + ", ".join(f"{v:.1f}" for v in two_networks)
            + " MiB",
        )
    )
    return rows


def settled_pss(bench: Bench, state: Path, *folders: tuple[str, Path]) -> float:
    """PSS (MiB) of the server and its children (shared pages counted once: the loader
    process and a load's child share most of theirs), SETTLE seconds after every
    network's history is complete, when the start's load and warm-up are over."""
    with networks(bench, state, *folders) as running:
        for name, _ in folders:
            wait_history(f"{running.base}/n/{name}")
        time.sleep(SETTLE)
        return pss_mib(running.pid)


@contextmanager
def networks(bench: Bench, state: Path, *folders: tuple[str, Path]) -> Iterator[Running]:
    """crawldash serving each (name, folder) as a network, with its defaults otherwise."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    named = [f"--network={name}={folder}" for name, folder in folders]
    command = [PY, "-m", "crawldash", "serve", *named, "--state-dir", str(state)]
    with server([*command, "--port", str(port)], base + "/api/status", bench.log) as process:
        yield Running(base, process)
