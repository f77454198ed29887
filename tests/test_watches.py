"""``--watch host:port``: a node's state in ``/metrics`` as ``crawldash_node_up``, with why
it is DOWN as a label, so that an operator's own nodes can page them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .conftest import Serve, eventually
from .test_reasons import bitnodes_folders, keep_attempts

HELD_NOT, UNKNOWN_TO_ALL = "203.0.113.2:8333", "[2001:db8::99]:8333"


def node_up(metrics: str) -> dict[tuple[str, str], str]:
    """``crawldash_node_up`` samples by (address, reason): their values."""
    found = {}
    for line in metrics.splitlines():
        if line.startswith("crawldash_node_up{"):
            labels, value = line.rsplit(" ", 1)
            fields = dict(part.split("=", 1) for part in labels[18:-1].split(","))
            found[fields["address"].strip('"'), fields["reason"].strip('"')] = value
    return found


async def test_watched_nodes_are_in_metrics_with_their_reason(serve: Serve, tmp_path: Path):
    export_dir, _ = bitnodes_folders(tmp_path)
    kept = tmp_path / "bridge"
    kept.mkdir()
    keep_attempts(kept, complete=True)
    watches = tuple(
        ("main", node) for node in ("203.0.113.1:8333", HELD_NOT, "[2001:DB8:0::99]:8333")
    )
    client = await serve(data_dir=export_dir, propagation_dir=(("main", kept),), watches=watches)

    async def paired() -> bool:
        metrics = await (await client.get("/metrics")).text()
        return (HELD_NOT, "reached_not_held") in node_up(metrics)

    await eventually(paired)
    metrics = await (await client.get("/metrics")).text()
    assert node_up(metrics) == {
        ("203.0.113.1:8333", "up"): "1.0",
        (HELD_NOT, "reached_not_held"): "0.0",
        (UNKNOWN_TO_ALL, "not_tried"): "0.0",  # an address no crawl had: still reported
    }


async def test_no_watch_no_series(serve: Serve, data_dir: Path):
    client = await serve()
    assert node_up(await (await client.get("/metrics")).text()) == {}


def test_a_watch_that_is_not_an_address_is_refused_in_one_line(tmp_path: Path):
    command = [sys.executable, "-m", "crawldash", "serve", "--data-dir", str(tmp_path)]
    command += ["--watch", "node.example.org:8333"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    assert run.returncode == 2
    assert "node.example.org:8333" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
