"""Test data: crawler files in both snapshot forms, written to real folders."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ONION = "a" * 52 + "bcde.onion"  # 56 base32 characters
I2P = "b" * 52 + ".b32.i2p"


def row(
    address: str,
    port: int = 8333,
    *,
    height: int = 900_000,
    agent: str = "/Satoshi:27.0.0/",
    tor: bool = False,
) -> list[Any]:
    """An export-form row; Tor/I2P style rows carry the nulls bitnodes writes for them."""
    if tor:
        return [
            address,
            port,
            70016,
            agent,
            1_700_000_000,
            1033,
            height,
            None,
            None,
            None,
            0.0,
            0.0,
            None,
            "TOR",
            "Tor network",
        ]
    return [
        address,
        port,
        70016,
        agent,
        1_700_000_000,
        1033,
        height,
        "host.example.net",
        "St Petersburg",
        "RU",
        59.8983,
        30.2618,
        "Europe/Moscow",
        "AS12389",
        "Rostelecom",
    ]


def rows(count: int, *, height: int = 900_000, first_octet: int = 198) -> list[list[Any]]:
    """``count`` distinct IPv4 rows."""
    return [
        row(f"{first_octet}.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}", height=height)
        for i in range(count)
    ]


def export_body(snapshot_rows: list[list[Any]]) -> bytes:
    return json.dumps(snapshot_rows).encode()


def api_body(timestamp: int, nodes: dict[str, list[Any]]) -> bytes:
    """The bitnodes API v1 form; ``nodes`` maps host:port to 13-field rows."""
    heights = [node[4] for node in nodes.values()]
    latest = max(set(heights), key=heights.count) if heights else 0
    body = {
        "timestamp": timestamp,
        "total_nodes": len(nodes),
        "latest_height": latest,
        "nodes": nodes,
    }
    return json.dumps(body).encode()


def write_snapshot(data_dir: Path, timestamp: int, body: bytes) -> Path:
    """Write a crawl atomically (temporary file, then rename), as a careful crawler does."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"{timestamp}.json"
    temp = data_dir / f".{timestamp}.json.tmp"
    temp.write_bytes(body)
    os.replace(temp, path)
    return path


def write_status(data_dir: Path, **fields: Any) -> Path:
    status = {
        "state": "running",
        "queue_size": 12,
        "height": 900_000,
        "last_elapsed": 512.5,
        "updated_at": 1_700_000_100,
    }
    status.update(fields)
    path = data_dir / "status.json"
    temp = data_dir / ".status.json.tmp"
    temp.write_text(json.dumps(status))
    os.replace(temp, path)
    return path
