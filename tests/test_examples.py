"""The files in examples/ work as the README says."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

from crawldash.app import create_app
from crawldash.settings.serve import Settings

EXAMPLES = Path(__file__).parent.parent / "examples"


async def test_sample_data_folder_is_served(aiohttp_client, tmp_path: Path):
    data_dir = tmp_path / "data"
    shutil.copytree(EXAMPLES / "data", data_dir)
    client = await aiohttp_client(create_app(Settings(data_dir=data_dir, state_dir=tmp_path / "s")))
    snapshot = await (await client.get("/api/snapshot")).json()
    assert snapshot["timestamp"] == 1_700_000_600
    assert snapshot["total_nodes"] == 7
    assert snapshot["latest_height"] == 925_001
    history = await (await client.get("/api/history")).json()
    assert history == [
        {"timestamp": 1_700_000_000, "reachable": 6},  # seven rows, one address twice
        {"timestamp": 1_700_000_600, "reachable": 7},
    ]
    status = await (await client.get("/api/status")).json()
    assert (status["state"], status["queue_size"], status["height"]) == ("running", 42, 925_001)
    check = await (await client.get("/api/check?address=[2A00:F440:0:3001:0::162]:8333")).json()
    assert check["reachable"] is True
    assert check["node"]["org"] == "LeaseWeb Netherlands B.V."
    networks = await (await client.get("/api/breakdown?by=network")).json()
    assert sum(row["nodes"] for row in networks["rows"]) == 7
    nodes = await (await client.get("/api/nodes?q=leaseweb")).json()
    assert [n["address"] for n in nodes["results"]] == ["[2a00:f440:0:3001::162]:8333"]
    listed = await (await client.get("/api/v1/snapshots/")).json()
    assert [(s["timestamp"], s["total_nodes"]) for s in listed["results"]] == [
        (1_700_000_600, 7),
        (1_700_000_000, 6),
    ]
    older = await (await client.get("/api/v1/snapshots/1700000000/")).json()
    assert older["total_nodes"] == len(older["nodes"]) == 6
    node = await (await client.get("/api/v1/nodes/2a00:f440:0:3001::162-8333/")).json()
    assert node["status"] == "UP"
    assert node["data"][12] == "LeaseWeb Netherlands B.V."


async def test_write_atomically_example_writes_a_servable_folder(aiohttp_client, tmp_path: Path):
    data_dir = tmp_path / "out"
    script = EXAMPLES / "write_atomically.py"
    command = [sys.executable, str(script), str(data_dir)]
    await asyncio.to_thread(subprocess.run, command, check=True, capture_output=True)
    assert not list(data_dir.glob(".*"))  # no temporary files left
    client = await aiohttp_client(create_app(Settings(data_dir=data_dir, state_dir=tmp_path / "s")))
    snapshot = await (await client.get("/api/snapshot")).json()
    assert snapshot["total_nodes"] == 1
    assert (await (await client.get("/api/status")).json())["state"] == "running"
