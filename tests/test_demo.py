"""The demo generator and ``crawldash demo``: realistic, seeded, and servable as written."""

from __future__ import annotations

import ipaddress
from collections import Counter
from pathlib import Path

import msgspec

from crawldash import cli
from crawldash.app import create_app
from crawldash.crawl.address import network_of
from crawldash.settings.serve import Settings
from crawldash.tools.fake_crawler import Crawl, generate_crawls, status_json

END = 1_795_400_400


def crawls(**options: int) -> list[Crawl]:
    return list(generate_crawls(**{"nodes": 500, "crawls": 30, "end": END, **options}))


def test_same_seed_same_bytes_other_seed_other_bytes():
    first, again, other = crawls(), crawls(), crawls(seed=2)
    assert [c.body() for c in first] == [c.body() for c in again]
    assert first[-1].body() != other[-1].body()


def test_timestamps_counts_and_rows():
    made = crawls()
    assert [c.timestamp for c in made] == [END - 600 * (29 - i) for i in range(30)]
    counts = [c.reachable for c in made]
    assert len(set(counts)) > 1  # counts drift
    assert all(250 <= n <= 576 for n in counts)
    for crawl in made:
        rows = msgspec.json.decode(crawl.body())
        assert all(len(row) == 15 for row in rows)
        assert len({(row[0], row[1]) for row in rows}) == crawl.reachable
        assert len(rows) > crawl.reachable  # some rows are listed twice, as crawlers do


def test_network_mix_and_tor_rows():
    rows = msgspec.json.decode(crawls(nodes=5000, crawls=1)[0].body())
    networks = Counter(network_of(row[0]) for row in rows)
    total = sum(networks.values())
    assert 0.45 < networks["ipv4"] / total < 0.65
    assert 0.10 < networks["ipv6"] / total < 0.20
    assert 0.20 < networks["onion"] / total < 0.35
    assert networks["i2p"] > 0
    assert networks["cjdns"] > 0
    for row in rows:
        if ":" in row[0]:
            assert ipaddress.IPv6Address(row[0]).compressed == row[0]
        if row[0].endswith(".onion"):
            assert len(row[0]) == 62
            assert row[7:14] == [None, None, None, 0.0, 0.0, None, "TOR"]
    heights = Counter(row[6] for row in rows)
    assert heights.most_common(1)[0][1] > 0.8 * total  # most nodes are at the tip


def test_status_json_shape():
    status = msgspec.json.decode(status_json(end=END))
    assert set(status) == {"state", "queue_size", "height", "last_elapsed", "updated_at"}
    assert status["updated_at"] == END
    assert isinstance(status["height"], int)


async def test_demo_command_writes_a_folder_that_serves_a_week(aiohttp_client, tmp_path: Path):
    code = cli.main(
        [
            "demo",
            "--dir",
            str(tmp_path / "demo"),
            "--nodes",
            "300",
            "--days",
            "2",
            "--keep-files",
            "5",
            "--no-serve",
        ]
    )
    assert code == 0
    data_dir, state_dir = tmp_path / "demo" / "data", tmp_path / "demo" / "state"
    assert len(list(data_dir.glob("*.json"))) == 6  # five crawls and status.json
    app = create_app(Settings(data_dir=data_dir, state_dir=state_dir))
    client = await aiohttp_client(app)
    history = await (await client.get("/api/history?limit=1000")).json()
    assert len(history) == 288  # two days of 10-minute crawls, most from the index
    snapshot = await (await client.get("/api/snapshot")).json()
    assert snapshot["timestamp"] == history[-1]["timestamp"]
    assert snapshot["total_nodes"] == history[-1]["reachable"]
    status = await (await client.get("/api/status")).json()
    assert status["state"] == "running"
    assert status["stale"] is False
    listed = await (await client.get("/api/v1/snapshots/?limit=100")).json()
    assert listed["count"] == 5  # the files kept; the pruned crawls are history points only
    oldest = listed["results"][-1]
    older = await (await client.get(f"/api/v1/snapshots/{oldest['timestamp']}/")).json()
    assert older["total_nodes"] == oldest["total_nodes"] == len(older["nodes"])
    address = next(iter(snapshot["nodes"]))
    host, _, port = address.rpartition(":")
    node = await (await client.get(f"/api/v1/nodes/{host.strip('[]')}-{port}/")).json()
    assert node["status"] == "UP"
    assert node["data"] == snapshot["nodes"][address]
