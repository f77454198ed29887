"""The operations examples are checked by the tools that will load them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .factories import export_body, rows, write_snapshot
from .process import free_port, nginx_config, serving

EXAMPLES = Path(__file__).parent.parent / "examples"
PROMETHEUS = EXAMPLES / "prometheus"
needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool (Debian prometheus) missing"
)

pytestmark = pytest.mark.slow


def run(*command: str, cwd: Path | None = None) -> str:
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


@needs_promtool
def test_prometheus_config_and_rules_are_valid():
    assert "10 rules found" in run(
        "promtool", "check", "rules", "crawldash-alerts.yml", cwd=PROMETHEUS
    )
    run("promtool", "check", "config", "prometheus.yml", cwd=PROMETHEUS)


@needs_promtool
def test_alerts_fire_when_the_crawl_stops_or_drops():
    assert "SUCCESS" in run(
        "promtool", "test", "rules", "crawldash-alerts.test.yml", cwd=PROMETHEUS
    )


def alert_rules() -> dict[str, str]:
    """Each alert rule of crawldash-alerts.yml, its text by its name."""
    text = (PROMETHEUS / "crawldash-alerts.yml").read_text()
    chunks = re.split(r"^      - alert: ", text, flags=re.MULTILINE)[1:]
    return {chunk.split("\n", 1)[0]: chunk for chunk in chunks}


AGGREGATION = re.compile(
    r"\b(sum|min|max|avg|count|group|stddev|stdvar|topk|bottomk|quantile|count_values)"
    r"\s*(\b(by|without)\s*\([^)]*\)\s*)?\("
)


def test_every_alert_is_per_network():
    """crawldash serves several networks, each series labelled with its own: every alert
    names its network, and no expression aggregates networks away (one network stale
    must not hide behind, or be hidden by, another)."""
    rules = alert_rules()
    assert len(rules) == 10
    for name, rule in rules.items():
        expression = re.split(r"\n        (?:for|labels):", rule.split("expr:", 1)[1])[0]
        assert AGGREGATION.search(expression) is None, (name, expression)
        assert "{{ $labels.network }}" in rule.split("summary:", 1)[1], name
    # the per-address-type gauge's new name, and its label
    collapsed = rules["AddressTypeCollapsed"]
    assert "crawldash_snapshot_nodes_by_address_type" in collapsed.split("expr:", 1)[1]
    assert "{{ $labels.address_type }}" in collapsed


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx (Debian nginx) missing")
def test_nginx_config_is_valid(tmp_path: Path):
    conf = (EXAMPLES / "nginx" / "crawldash.conf").read_text()
    (tmp_path / "crawldash.conf").write_text(conf.replace("/var/cache/nginx/", f"{tmp_path}/"))
    (tmp_path / "nginx.conf").write_text(
        f"error_log {tmp_path}/error.log;\npid {tmp_path}/nginx.pid;\nevents {{}}\n"
        f"http {{ include {tmp_path}/crawldash.conf; }}\n"
    )
    output = run("nginx", "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"))
    assert "test is successful" in output


@pytest.mark.parametrize("unit", sorted((EXAMPLES / "systemd").glob("*.service")))
def test_systemd_units_name_real_commands(unit: Path, tmp_path: Path):
    text = unit.read_text()
    exec_start = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert exec_start.split()[1] in {"serve", "bitnodes-status", "archive"}
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze missing: the unit's syntax is not checked")
    installed = Path(sys.executable).parent / "crawldash"  # this checkout's console script
    copy = tmp_path / unit.name
    copy.write_text(text.replace("/opt/crawldash/.venv/bin/crawldash", str(installed)))
    run("systemd-analyze", "verify", "--man=no", str(copy))


@pytest.mark.parametrize("unit", sorted((EXAMPLES / "systemd").glob("*.service")))
def test_systemd_units_are_hardened(unit: Path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze (Debian systemd) missing")
    text = unit.read_text()
    if "CRAWLDASH_DATA_DIR=/home/" in text:  # a bitnodes clone in a home folder stays readable
        assert "ProtectHome=read-only" in text
    else:  # the bridge writes outside every home folder, and reads none of them
        assert "ProtectHome=true" in text
        assert "/home/" not in text.replace("# ", "")
    output = run("systemd-analyze", "security", "--offline=true", str(unit))
    found = re.search(r"Overall exposure level for \S+: ([0-9.]+)", output)
    assert found is not None, output
    assert float(found.group(1)) < 5.0, output


@pytest.mark.parametrize("unit", sorted((EXAMPLES / "systemd").glob("*.service")))
def test_units_start_once_the_clock_is_synced(unit: Path):
    """Started on a clock not yet synced, recent crawls would look named from the future."""
    text = unit.read_text()
    after = next(line for line in text.splitlines() if line.startswith("After="))
    wants = next(line for line in text.splitlines() if line.startswith("Wants="))
    assert "time-sync.target" in after.split("=", 1)[1].split()
    assert "time-sync.target" in wants.split("=", 1)[1].split()


def test_the_bridge_unit_keeps_the_redis_url_in_an_environment_file():
    text = (EXAMPLES / "systemd" / "crawldash-bitnodes-status.service").read_text()
    assert "EnvironmentFile=/etc/crawldash/bitnodes-status.env" in text
    assert "REDIS_URL" not in text.replace("# CRAWLDASH_REDIS_URL", "")
    env = (EXAMPLES / "systemd" / "bitnodes-status.env").read_text()
    assert "CRAWLDASH_REDIS_URL=redis://" in env


def nginx_in_front(tmp_path: Path, upstream: str) -> tuple[Path, int]:
    """The example configuration, its paths and ports put here; returns the config and port."""
    port = free_port()
    return nginx_config(tmp_path, EXAMPLES / "nginx" / "crawldash.conf", port, upstream), port


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx (Debian nginx) missing")
def test_nginx_example_in_front_of_crawldash(tmp_path: Path):
    now = int(time.time()) // 600 * 600
    data = tmp_path / "data"
    write_snapshot(data, now - 600, export_body(rows(3)))
    write_snapshot(data, now, export_body(rows(4)))
    with serving(data, tmp_path / "state") as base:
        conf, port = nginx_in_front(tmp_path, base.removeprefix("http://"))
        nginx = subprocess.Popen(["nginx", "-p", str(tmp_path), "-c", str(conf)])
        try:
            front = f"http://127.0.0.1:{port}"
            wait_until_answers(front + "/")
            assert fetch(front + "/")[0] == 200
            assert fetch(front + "/static/app.js")[0] == 200
            first, second = fetch(front + "/api/history"), fetch(front + "/api/history")
            assert (first[1].get("X-Cache-Status"), second[1].get("X-Cache-Status")) == (
                "MISS",
                "HIT",
            )
            one = fetch(front + "/api/snapshot", {"Accept-Encoding": "gzip, deflate"})
            other = fetch(front + "/api/snapshot", {"Accept-Encoding": "deflate, gzip;q=0.9"})
            assert (one[1]["X-Cache-Status"], other[1]["X-Cache-Status"]) == ("MISS", "HIT")
            assert other[1]["Content-Encoding"] == "gzip"
        finally:
            nginx.terminate()
            nginx.wait(10)


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=5) as response:
        response.read()
        return response.status, dict(response.headers)


def wait_until_answers(url: str) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            fetch(url)
            return
        except OSError:
            assert time.monotonic() < deadline, "nginx did not answer"
            time.sleep(0.05)
