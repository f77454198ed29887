"""crawldash with ``--access-log`` (its lines go to stderr, as under systemd to the
journal), paired run for run with aiohttp's ceiling as the default rows are."""

from __future__ import annotations

import shutil

from bench.context import Bench
from bench.load import free_port
from bench.rows import Requests, Row, Server
from bench.scenarios.endpoints import ceiling_command, endpoints
from bench.servers import Ask, Target, paired, server, wait_history

ACCESS_LOGGED = ("status", "history?limit=144 (gzip)", "check hit", "check miss")


def run(bench: Bench) -> list[Row]:
    state = bench.config.root / "state-access-log"
    shutil.rmtree(state, ignore_errors=True)
    shutil.copytree(bench.ready_state(), state)
    etag, _ = bench.snapshot()
    cells = [cell for cell in endpoints(bench.hit(), etag) if cell.name in ACCESS_LOGGED]
    ceiling_port = free_port()
    ceiling = f"http://127.0.0.1:{ceiling_port}"
    rows = list[Row]()
    with (
        bench.crawldash(state, "--access-log") as ours,
        server(ceiling_command(ceiling_port), ceiling + "/", bench.log) as ceiling_process,
    ):
        wait_history(ours.base)
        pairings = paired(
            Target(ours.base, ours.pid),
            Target(ceiling, ceiling_process.pid),
            [Ask(cell.path, cell.headers) for cell in cells],
            bench.config.pairs,
        )
        for cell, (mine, theirs) in zip(cells, pairings, strict=True):
            rows.append(
                Requests(cell.name, Server.CRAWLDASH, tuple(mine), tuple(theirs), access_log=True)
            )
    return rows
