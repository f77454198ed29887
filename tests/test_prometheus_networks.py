"""The shipped alert rules, loaded by a real Prometheus scraping a real crawldash that
serves two networks: an alert fires for the network in trouble alone."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from .factories import export_body, rows, write_snapshot
from .helpers import fetch
from .process import PATIENCE, free_port, wait_until

PROMETHEUS = Path(__file__).parent.parent / "examples" / "prometheus"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("prometheus") is None, reason="prometheus (Debian prometheus) missing"
    ),
]


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


@contextmanager
def crawldash(
    networks: dict[str, Path], state_dir: Path, *options: str
) -> Iterator[tuple[str, Callable[[], None]]]:
    """``python -m crawldash serve --network NAME=DIR ...`` until it answers; yields its
    base URL and a function that stops it (SIGINT) and checks that it exited cleanly.
    (``process.serving`` always passes ``--data-dir``, which ``--network`` excludes.)"""
    port = free_port()
    command = [sys.executable, "-m", "crawldash", "serve", "--state-dir", str(state_dir)]
    for name, folder in networks.items():
        command += ["--network", f"{name}={folder}"]
    command += ["--port", str(port), *options]
    server = subprocess.Popen(
        command,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"},
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"

    def stop() -> None:
        if server.returncode is not None:
            return
        server.send_signal(signal.SIGINT)
        _, stderr = server.communicate(timeout=10)
        assert server.returncode == 0, stderr
        assert "Traceback" not in stderr, stderr

    try:
        wait_until(lambda: server.poll() is not None or get_json(f"{base}/api/status"), 15)
        assert server.poll() is None, server.communicate()[1]
        yield base, stop
    finally:
        stop()


@contextmanager
def prometheus(tmp_path: Path, target: str) -> Iterator[str]:
    """The example prometheus.yml, scraping ``target`` and evaluating the example rules
    every second; yields Prometheus' base URL once it is ready."""
    config = (PROMETHEUS / "prometheus.yml").read_text()
    for old, new in [
        ("scrape_interval: 30s", "scrape_interval: 1s"),
        ("evaluation_interval: 30s", "evaluation_interval: 1s"),
        ('["127.0.0.1:8080"]', f'["{target}"]'),
        ("- crawldash-alerts.yml", f"- {PROMETHEUS / 'crawldash-alerts.yml'}"),
    ]:
        assert old in config, old
        config = config.replace(old, new)
    (tmp_path / "prometheus.yml").write_text(config)
    port = free_port()
    log = (tmp_path / "prometheus.log").open("w")
    server = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: server.poll() is not None or fetch(f"{base}/-/ready")[0] == 200, 20)
        assert server.poll() is None, (tmp_path / "prometheus.log").read_text()
        yield base
    finally:
        server.terminate()
        server.wait(10)
        log.close()


def alerts(base: str, name: str) -> dict[str, str]:
    """The state (pending, firing) of each network's alert ``name``."""
    found = get_json(f"{base}/api/v1/alerts")["data"]["alerts"]
    return {
        alert["labels"].get("network", ""): alert["state"]
        for alert in found
        if alert["labels"]["alertname"] == name
    }


def query(base: str, expression: str) -> dict[str, str]:
    """The value of each network's sample of an instant query."""
    url = f"{base}/api/v1/query?query={urllib.parse.quote(expression)}"
    return {
        sample["metric"].get("network", ""): sample["value"][1]
        for sample in get_json(url)["data"]["result"]
    }


def rules_evaluated(base: str) -> bool:
    """True once every rule has been evaluated; fails on a rule that cannot be."""
    groups = get_json(f"{base}/api/v1/rules")["data"]["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    for rule in rules:
        assert rule["health"] != "err", rule
    return len(rules) == 10 and all(rule["health"] == "ok" for rule in rules)


def scraped(base: str, names: set[str]) -> set[tuple[str, str]]:
    """(name, network) of each of the series ``names`` Prometheus holds now."""
    expression = f'count by (__name__, network) ({{__name__=~"{"|".join(names)}"}})'
    url = f"{base}/api/v1/query?query={urllib.parse.quote(expression)}"
    result = get_json(url)["data"]["result"]
    return {(sample["metric"]["__name__"], sample["metric"]["network"]) for sample in result}


def series_in_rules() -> set[str]:
    """The crawldash series the alert rules' expressions read, but those of watched nodes
    (``crawldash_node_up``, only with ``--watch``)."""
    text = (PROMETHEUS / "crawldash-alerts.yml").read_text()
    expressions = re.findall(r"expr: (.*?)\n        (?:for|labels):", text, flags=re.DOTALL)
    assert len(expressions) == 10
    return set(re.findall(r"crawldash_\w+", "\n".join(expressions))) - {"crawldash_node_up"}


def until(check: Callable[[], Any], expected: Any, within: float = PATIENCE) -> None:
    """Poll ``check`` until it returns ``expected``; fail showing the last answer."""
    deadline = time.monotonic() + within
    while (got := check()) != expected:
        assert time.monotonic() < deadline, f"{got!r} != {expected!r}"
        time.sleep(0.2)


def test_alerts_fire_for_the_network_in_trouble_alone(tmp_path: Path):
    now = int(time.time())
    write_snapshot(tmp_path / "mainnet", now - 5, export_body(rows(4)))  # fresh
    write_snapshot(tmp_path / "testnet4", now - 3600, export_body(rows(3)))  # an hour old
    for name, timestamp in [("mainnet", now - 1), ("testnet4", now - 1800)]:
        write_snapshot(tmp_path / name, timestamp, b"")  # rejected: files_rejected_total
    networks = {"mainnet": tmp_path / "mainnet", "testnet4": tmp_path / "testnet4"}
    with (
        crawldash(networks, tmp_path / "state", "--stale-after", "300") as (base, stop),
        prometheus(tmp_path, base.removeprefix("http://")) as prom,
    ):
        # both networks are scraped from the one target, only testnet4 is stale
        until(lambda: query(prom, "crawldash_stale"), {"mainnet": "0", "testnet4": "1"})
        wait_until(lambda: rules_evaluated(prom), 15)
        # every series the rules read is scraped, for each network: none missing
        read = series_in_rules()
        wanted = {(name, network) for name in read for network in networks}
        until(lambda: wanted - scraped(prom, read), set())
        # CrawlSnapshotStale waits 5 minutes before firing: pending is what a test sees
        until(lambda: alerts(prom, "CrawlSnapshotStale"), {"testnet4": "pending"})
        # no status file in either folder: the same alert, once per network
        until(
            lambda: alerts(prom, "CrawlerStateUnknown"),
            {"mainnet": "pending", "testnet4": "pending"},
        )
        assert alerts(prom, "CrawldashDown") == {}

        stop()  # the process, and every network it serves, stops answering
        until(
            lambda: alerts(prom, "CrawldashDown"),
            {"mainnet": "pending", "testnet4": "pending"},
        )
