"""Several networks in one process: two folders written by the demo generator, served by
one real ``crawldash serve`` with ``--network``, each checked against its own files."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import msgspec
import pytest

from crawldash.demo.showcase import write_demo

from .factories import write_status
from .helpers import answer, get
from .process import serving

NETWORKS = {"mainnet": (1, 300, 6), "testnet4": (2, 120, 4)}  # name: (seed, nodes, files kept)


def error_of(url: str) -> tuple[int, dict[str, Any]]:
    status, body = answer(url)
    assert status >= 400, status
    return status, body["error"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("networks")
    made = {}
    for name, (seed, nodes, kept) in NETWORKS.items():
        data_dir, _ = write_demo(root / name, nodes=nodes, crawls=12, keep_files=kept, seed=seed)
        made[name] = data_dir
    return made


def crawl_files(data_dir: Path) -> list[Path]:
    """The folder's crawl files, newest first."""
    return sorted(data_dir.glob("[0-9]*.json"), reverse=True)


def nodes_in(path: Path) -> int:
    return len({(row[0], row[1]) for row in msgspec.json.decode(path.read_bytes())})


def test_each_network_serves_its_own_files(folders: dict[str, Path], tmp_path: Path):
    options = [f"--network={name}={folder}" for name, folder in folders.items()]
    with serving(None, tmp_path / "state", *options) as base:
        listed = get(f"{base}/api/networks")["networks"]
        assert [row["name"] for row in listed] == list(NETWORKS)
        for row, (name, folder) in zip(listed, folders.items(), strict=True):
            newest = crawl_files(folder)[0]
            assert row["path"] == f"n/{name}/"
            assert row["snapshot_timestamp"] == int(newest.stem)
            assert row["nodes"] == nodes_in(newest)
            check_network(f"{base}/n/{name}", folder)
        # The unprefixed routes are the first network's, exactly.
        first = f"{base}/n/mainnet"
        assert get(f"{base}/api/snapshot") == get(f"{first}/api/snapshot")
        assert get(f"{base}/api/history?limit=144") == get(f"{first}/api/history?limit=144")
        page = get(f"{base}/api/v1/snapshots/?limit=1")
        assert page["next"] == f"{base}/api/v1/snapshots/?limit=1&page=2"
        assert page["results"][0]["url"].startswith(f"{base}/api/v1/snapshots/")


def check_network(base: str, folder: Path) -> None:
    """Snapshot, status, history and the v1 routes, links followed, against ``folder``."""
    files = crawl_files(folder)
    snapshot = get(f"{base}/api/snapshot")
    assert snapshot["timestamp"] == int(files[0].stem)
    assert snapshot["total_nodes"] == nodes_in(files[0])
    assert get(f"{base}/api/status")["snapshot_timestamp"] == int(files[0].stem)
    history = get(f"{base}/api/history?limit=144")
    assert [point["timestamp"] for point in history][-len(files) :] == sorted(
        int(path.stem) for path in files
    )
    page = get(f"{base}/api/v1/snapshots/?limit=2")
    assert page["count"] == len(files)
    assert page["next"] == f"{base}/api/v1/snapshots/?limit=2&page=2"
    for result, path in zip(page["results"], files, strict=False):
        assert result["url"] == f"{base}/api/v1/snapshots/{path.stem}/"
        assert result["total_nodes"] == nodes_in(path)
    older = page["results"][1]
    followed = get(older["url"])
    assert followed["timestamp"] == older["timestamp"]
    assert len(followed["nodes"]) == nodes_in(files[1])
    assert get(page["next"])["results"][0]["timestamp"] == int(files[2].stem)
    address, port, *_ = msgspec.json.decode(files[0].read_bytes())[0]
    host = f"[{address}]" if ":" in address else address
    assert get(f"{base}/api/check?address={host}:{port}")["reachable"] is True


def test_names_paths_and_metrics_per_network(folders: dict[str, Path], tmp_path: Path):
    status_file = tmp_path / "testnet4-status.json"
    write_status(tmp_path, state="starting", queue_size=7)
    (tmp_path / "status.json").rename(status_file)
    options = [f"--network={name}={folder}" for name, folder in folders.items()]
    options.append(f"--network-status-file=testnet4={status_file}")
    with serving(None, tmp_path / "state", *options) as base:
        assert get(f"{base}/n/testnet4/api/status")["state"] == "starting"
        assert get(f"{base}/n/mainnet/api/status")["state"] == "running"  # the demo's own
        status, error = error_of(f"{base}/n/regtest/api/status")
        assert (status, error["code"]) == (404, "network_not_found")
        assert "mainnet, testnet4" in error["message"]
        assert error_of(f"{base}/n/testnet4/api/nothing")[1]["code"] == "not_found"
        request = urllib.request.Request(f"{base}/n/testnet4")
        with urllib.request.urlopen(request, timeout=10) as response:  # follows the redirect
            assert response.url == f"{base}/n/testnet4/"
            assert b"<html" in response.read()
        get(f"{base}/n/testnet4/api/v1/snapshots/latest/")  # a route with a path parameter
        with urllib.request.urlopen(f"{base}/n/testnet4/metrics", timeout=10) as response:
            own = response.read().decode()
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
            every = response.read().decode()
    newest = {name: nodes_in(crawl_files(folder)[0]) for name, folder in folders.items()}
    assert f'crawldash_snapshot_nodes{{network="testnet4"}} {newest["testnet4"]}.0' in own
    assert 'network="mainnet"' not in own
    for name, count in newest.items():
        assert f'crawldash_snapshot_nodes{{network="{name}"}} {count}.0' in every
    assert 'crawldash_crawler_state{network="testnet4",state="starting"} 1.0' in every
    # Requests are counted by the route that answered them, as it was declared.
    latest = 'route="/api/v1/snapshots/{timestamp}/",status="200"} 1.0'
    assert f'crawldash_http_requests_total{{network="testnet4",{latest}' in own
    # Each network has its own history and presence files in the one state folder.
    assert len(list((tmp_path / "state").rglob("history*"))) == 2


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--network", "mainnet"], "'mainnet' is not NAME=PATH"),
        (["--network", "Main net=/x"], "is not a network name"),
        (["--network", "a=/x,a=/y"], "the network 'a' is named twice"),
        (["--network", "a=/x", "--data-dir", "/y"], "not both"),
        (["--network", "a=/x", "--network-status-file", "b=/s"], "names no network served: b"),
    ],
)
def test_a_bad_network_option_is_one_line(arguments: list[str], said: str, tmp_path: Path):
    command = [sys.executable, "-m", "crawldash", "serve", "--state-dir", str(tmp_path)]
    run = subprocess.run([*command, *arguments], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2
    assert said in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "Traceback" not in run.stderr
