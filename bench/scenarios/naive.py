"""The server a user would otherwise write (bench/naive_server.py): same framework, no
state kept between requests; 2 connections and long runs, as it takes a tenth of a second
or more per request."""

from __future__ import annotations

from bench.context import Bench
from bench.load import free_port
from bench.rows import Requests, Row, Server
from bench.scenarios.endpoints import endpoints
from bench.servers import HERE, PY, measure_slow, server


def run(bench: Bench) -> list[Row]:
    config = bench.config
    cells = [cell for cell in endpoints(bench.hit(), '"none"') if cell.naive_too]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [PY, str(HERE / "naive_server.py"), str(bench.data.data15k), str(port)]
    rows = list[Row]()
    with server(command, base + "/api/status", bench.log) as process:
        for cell in cells:
            samples = measure_slow(
                base + cell.path,
                process.pid,
                cell.headers,
                config.runs,
                config.seconds,
                config.quick,
            )
            rows.append(Requests(cell.name, Server.NAIVE, tuple(samples)))
    return rows
