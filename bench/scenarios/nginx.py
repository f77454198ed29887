"""nginx serving the snapshot file crawldash serves: with its default access log (combined
format, to a file), as installed, and with ``access_log off``; and crawldash's snapshot
measured run for run with nginx's default (each run of crawldash followed by one of
nginx's, identity and gzip), judged by the median of the pairs' ratios, so that a shared
machine's drift falls on both alike (the target: crawldash at least as fast)."""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path

from bench.context import Bench
from bench.load import free_port
from bench.rows import Measure, Note, Requests, Row, Section, Server, Unit
from bench.servers import Ask, Target, measure, paired, server

ENCODINGS = {"snapshot (identity)": "identity", "snapshot (gzip)": "gzip"}
RATIO_LIMIT = 1.0  # nginx's req/s over crawldash's, run for run: at most even


def run(bench: Bench) -> list[Row]:
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).exists():
        return [Note("nginx not installed: its column is n/a")]
    bench.snapshot()  # written to the static folder
    return nginx(bench, binary, access_log=True) + nginx(bench, binary, access_log=False)


def nginx(bench: Bench, binary: str, access_log: bool) -> list[Row]:
    root, config = bench.config.root, bench.config
    port = free_port()
    conf = root / "nginx.conf"
    log = f"access_log {root}/nginx-access.log" if access_log else "access_log off"
    conf.write_text(
        f"worker_processes 1; daemon off; pid {root}/nginx.pid; error_log {root}/nginx.err;\n"
        "events { worker_connections 1024; }\n"
        f"http {{ {log}; default_type application/json; server {{ "
        f"listen 127.0.0.1:{port}; root {bench.data.static}; "
        "location / { gzip_static on; } } }\n"
    )
    url = f"http://127.0.0.1:{port}/snapshot.json"
    who = Server.NGINX if access_log else Server.NGINX_OFF
    rows = list[Row]()
    with server([binary, "-p", str(root), "-c", str(conf)], url, bench.log) as process:
        for name, coding in ENCODINGS.items():
            headers = {"Accept-Encoding": coding}
            samples = measure(url, process.pid, headers, config.runs, config.seconds)
            rows.append(Requests(name, who, tuple(samples)))
        if access_log:
            rows += run_for_run(bench, Target(url.removesuffix("/snapshot.json"), process.pid))
    return rows


def run_for_run(bench: Bench, nginx: Target) -> list[Row]:
    """crawldash's /api/snapshot and nginx's file, one-second runs alternately."""
    asks = [Ask("", {"Accept-Encoding": coding}) for coding in ENCODINGS.values()]
    with bench.crawldash(bench.ready_state()) as ours:
        ours_target = Target(ours.base + "/api/snapshot", ours.pid)
        theirs = Target(nginx.base + "/snapshot.json", nginx.pid)
        pairings = paired(ours_target, theirs, asks, bench.config.pairs)
    rows = list[Row]()
    for name, (mine, nginx_runs) in zip(ENCODINGS, pairings, strict=True):
        ratios = [b.rps / a.rps for a, b in zip(mine, nginx_runs, strict=True) if a.rps]
        ours_rps = statistics.median(s.rps for s in mine)
        nginx_rps = statistics.median(s.rps for s in nginx_runs)
        rows.append(
            Measure(
                Section.TARGETS,
                f"{name}: nginx (default access log) req/s / crawldash req/s, "
                f"{len(ratios)} one-second runs of each, alternately",
                (statistics.median(ratios) if ratios else float("nan"),),
                Unit.RATIO,
                limits=(RATIO_LIMIT,),
                details=f"median {ours_rps:,.0f} req/s crawldash, {nginx_rps:,.0f} nginx",
            )
        )
    return rows
