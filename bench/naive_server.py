"""The server a user would otherwise write: same framework, no state kept between requests.

Every request lists the folder, reads and parses the newest crawl file, and answers from
that; ``check`` scans the rows; ``history`` reads the newest N files.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

from aiohttp import web

DATA = Path(sys.argv[1])


def crawl_files() -> list[Path]:
    names = [n for n in os.listdir(DATA) if n.endswith(".json") and n[:-5].isdigit()]
    return [DATA / n for n in sorted(names, key=lambda n: int(n[:-5]))]


def newest() -> tuple[int, list[list[object]]]:
    path = crawl_files()[-1]
    return int(path.stem), json.loads(path.read_bytes())


async def snapshot(request: web.Request) -> web.Response:
    timestamp, rows = newest()
    nodes = {f"[{r[0]}]:{r[1]}" if ":" in str(r[0]) else f"{r[0]}:{r[1]}": r[2:] for r in rows}
    body = {
        "timestamp": timestamp,
        "total_nodes": len(nodes),
        "latest_height": Counter(r[6] for r in rows).most_common(1)[0][0],
        "nodes": nodes,
    }
    response = web.json_response(body)
    if "gzip" in request.headers.get("Accept-Encoding", ""):
        response.enable_compression()  # compressed per request, as a plain handler would
    return response


async def status(request: web.Request) -> web.Response:
    timestamp, _ = newest()
    body = json.loads((DATA / "status.json").read_bytes())
    body["snapshot_timestamp"] = timestamp
    return web.json_response(body)


async def history(request: web.Request) -> web.Response:
    limit = int(request.query.get("limit", "144"))
    points = [
        {"timestamp": int(p.stem), "reachable": len(json.loads(p.read_bytes()))}
        for p in crawl_files()[-limit:]
    ]
    return web.json_response(points)


async def check(request: web.Request) -> web.Response:
    host, _, port = request.query["address"].rpartition(":")
    timestamp, rows = newest()
    found = any(str(r[0]) == host.strip("[]") and str(r[1]) == port for r in rows)
    return web.json_response(
        {"address": request.query["address"], "reachable": found, "snapshot_timestamp": timestamp}
    )


app = web.Application()
app.add_routes(
    [
        web.get("/api/snapshot", snapshot),
        web.get("/api/status", status),
        web.get("/api/history", history),
        web.get("/api/check", check),
    ]
)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[2]), print=None, access_log=None)
