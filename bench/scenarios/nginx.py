"""nginx serving the snapshot file crawldash serves: with its default access log (combined
format, to a file), as installed, and with ``access_log off``."""

from __future__ import annotations

import shutil
from pathlib import Path

from bench.context import Bench
from bench.load import free_port
from bench.rows import Note, Requests, Row, Server
from bench.servers import measure, server

ENCODINGS = {"snapshot (identity)": "identity", "snapshot (gzip)": "gzip"}


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
    return rows
