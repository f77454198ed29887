"""The demo generator and ``crawldash demo``: realistic, seeded, and servable as written."""

from __future__ import annotations

import ipaddress
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from functools import partial
from pathlib import Path

import msgspec
import pytest

from crawldash import cli
from crawldash.app import create_app
from crawldash.crawl.address import network_of
from crawldash.demo.fake_crawler import Crawl, generate_crawls, status_json
from crawldash.demo.showcase import PEER_HOSTNAME as PEER_HOST
from crawldash.settings.serve import Settings

from .helpers import answer, get
from .process import PATIENCE, free_port, wait_until

DEMO_PATIENCE = 480.0  # seconds: the demo writes a week of crawls before it serves them

END = 1_795_400_400


def crawls(**options: int) -> list[Crawl]:
    made = {"nodes": 500, "crawls": 30, "seed": 1, **options}
    return list(
        generate_crawls(nodes=made["nodes"], crawls=made["crawls"], end=END, seed=made["seed"])
    )


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


def test_demo_writes_what_the_bridge_and_a_second_network_give(tmp_path: Path):
    """Kept propagation and latency, attempts and crawl files, read back by the code that
    serves them; a second network beside the first."""
    from crawldash.crawl.attempts import crawl_attempts, read_kept
    from crawldash.crawl.propagation import read_blocks, read_latency
    from crawldash.crawl.reached import newest_not_after, read_reached
    from crawldash.demo.sample_bridge import LATENCY_EVERY
    from crawldash.demo.showcase import served, write_showcase

    demo = write_showcase(tmp_path, nodes=400, crawls=20, keep_files=3, seed=1)
    (first, data_dir), (second, second_dir) = demo.networks
    assert (first, second) == ("mainnet", "testnet4")
    newest = max(int(p.stem) for p in data_dir.glob("1*.json"))
    assert len(list(second_dir.glob("1*.json"))) == 3
    blocks = read_blocks(demo.bridge_dir)
    assert blocks is not None
    assert len(blocks.blocks) == 288
    assert [b.first_seen for b in blocks.blocks] == sorted(
        (b.first_seen for b in blocks.blocks), reverse=True
    )
    assert all(0 < b.p50 <= b.p90 <= b.max and len(b.head) == 10 for b in blocks.blocks)
    latency = read_latency(demo.bridge_dir)
    assert latency is not None
    assert latency.as_of == newest // 600
    paired = newest_not_after(demo.crawl_dir, newest)
    assert paired is not None
    reached = read_reached(paired[1], paired[0], 10**8)
    snapshot = msgspec.json.decode((data_dir / f"{newest}.json").read_bytes())
    exported = {f"[{r[0]}]:{r[1]}" if ":" in r[0] else f"{r[0]}:{r[1]}" for r in snapshot}
    # One node in LATENCY_EVERY of the newest crawl (whose size moves with the clock's hour).
    assert set(latency.nodes) <= exported
    assert len(latency.nodes) == -(-len(exported) // LATENCY_EVERY)
    assert exported < reached.addresses  # and some reached but not held
    kept = read_kept(demo.bridge_dir)
    assert kept is not None
    attempts = crawl_attempts(kept, paired[0])
    assert attempts is not None
    assert attempts.timestamp == paired[0]
    assert attempts.complete
    assert attempts.reached == reached.addresses < attempts.tried  # and some failed
    assert attempts.rules.exclude_nodes
    settings = served(demo, Settings())
    assert [f.name for f in settings.folders] == ["mainnet", "testnet4"]
    assert settings.folders[0].propagation_dir == demo.bridge_dir
    assert settings.folders[0].crawl_dir == demo.crawl_dir


@pytest.mark.slow
@pytest.mark.timeout(DEMO_PATIENCE + 2 * PATIENCE)
def test_make_demo_answers_with_the_map_propagation_and_both_networks(tmp_path: Path):
    """``make demo``'s command, at its default size (15,000 nodes, a week of crawls), writes
    its folders and serves the map, propagation and both networks. How long that takes is
    the machine's: a bound here would fail on a busy one (make test-busy), so the test waits
    long, and fails at once if the demo ends."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "crawldash", "demo", "--dir", str(tmp_path), "--port"]
    demo = subprocess.Popen([*command, str(port)], stderr=subprocess.PIPE, text=True)

    def served(url: str) -> object:
        if demo.poll() is not None:
            pytest.fail(f"the demo ended with status {demo.returncode}")
        return get(url)

    try:
        for path in ("/api/map", "/api/v1/inv/", "/n/testnet4/api/map"):
            wait_until(partial(served, base + path), within=DEMO_PATIENCE)
        mapped = get(base + "/api/map")
        # "Check now" works: the demo lists its own peer, and the live check reaches it.
        found = get(base + f"/api/nodes?q={PEER_HOST}&limit=1")
        host, _, port_ = found["results"][0]["address"].rpartition(":")
        form = urllib.parse.urlencode({"address": host, "port": port_}).encode()
        checked_status, checked = answer(base + "/api/v1/checknode/", data=form)
        refused = urllib.parse.urlencode({"address": "127.0.0.2", "port": port_}).encode()
        other = answer(base + "/api/v1/checknode/", data=refused)  # that address alone
    finally:
        demo.send_signal(signal.SIGINT)
        _, stderr = demo.communicate(timeout=PATIENCE)
    # The count moves with the demo's daily wave, so the map is held to the file it names.
    rows = msgspec.json.decode((tmp_path / "data" / f"{mapped['timestamp']}.json").read_bytes())
    assert mapped["total_nodes"] == len({(row[0], row[1]) for row in rows}) > 10_000
    assert (checked["success"], checked["user_agent"]) == (True, "/crawldash-demo-peer:1.0/")
    assert checked_status == 200, checked
    assert other[1]["error"]["code"] == "address_not_allowed", other
    assert demo.returncode == 0, stderr


def test_the_demo_checks_its_own_peer_alone():
    """The demo's made-up nodes may bear real machines' addresses: its live check reaches
    its peer on loopback and nothing else (--live-check-only)."""
    from crawldash.demo.launch import with_live_check
    from crawldash.demo.peer import HOST
    from crawldash.settings.serve import Settings

    settings = with_live_check(Settings())
    assert [str(n) for n in settings.live_check_only] == [f"{HOST}/32"]
    assert settings.live_check_allow == settings.live_check_only
