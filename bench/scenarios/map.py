"""``/api/map`` of the 15,000-node crawl: its size gzipped, and its requests beside
aiohttp's ceiling run for run (the answer is built once per crawl in the loader process, and
one with a match once per text, so a request only picks bytes)."""

from __future__ import annotations

import gzip
import json

from bench.context import Bench
from bench.load import free_port
from bench.rows import Measure, Requests, Row, Section, Server, Unit
from bench.scenarios.endpoints import ceiling_command
from bench.servers import Ask, Target, get, paired, server, wait_history

MAP_FLOOR = 0.8  # of the ceiling's req/s (issue 43)
GZIPPED_LIMIT = 0.1  # MB: the map of a 15,000-node crawl, gzipped (issue 43)
GZIP = {"Accept-Encoding": "gzip"}
ASKS = (  # (name, path, floor)
    ("map (gzip)", "/api/map", MAP_FLOOR),
    ("map?match=Knots (gzip, kept)", "/api/map?match=Knots", None),
)


def run(bench: Bench) -> list[Row]:
    ceiling_port = free_port()
    ceiling = f"http://127.0.0.1:{ceiling_port}"
    with (
        bench.crawldash(bench.ready_state()) as ours,
        server(ceiling_command(ceiling_port), ceiling + "/", bench.log) as ceiling_process,
    ):
        wait_history(ours.base)
        headers, body = get(ours.base + "/api/map", GZIP)
        if headers.get("Content-Encoding") != "gzip":
            raise RuntimeError(f"/api/map not gzipped: {headers}")
        answer = json.loads(gzip.decompress(body))
        get(ours.base + ASKS[1][1], GZIP)  # the match's answer made, as a page's first ask
        pairings = paired(
            Target(ours.base, ours.pid),
            Target(ceiling, ceiling_process.pid),
            [Ask(path, GZIP) for _, path, _ in ASKS],
            bench.config.pairs,
        )
    rows: list[Row] = [
        Measure(
            Section.TARGETS,
            f"map of {answer['total_nodes']:,} nodes, gzipped",
            (len(body) / 1e6,),
            Unit.MB,
            3,
            limits=(GZIPPED_LIMIT,),
            details=f"{len(answer['groups']):,} places, {answer['not_mapped']:,} not mapped",
        )
    ]
    for (name, _, floor), (mine, theirs) in zip(ASKS, pairings, strict=True):
        rows.append(Requests(name, Server.CRAWLDASH, tuple(mine), tuple(theirs), floor=floor))
    return rows
