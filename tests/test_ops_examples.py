"""The operations examples are checked by the tools that will load them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"
PROMETHEUS = EXAMPLES / "prometheus"
needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool (Debian prometheus) missing"
)


def run(*command: str, cwd: Path | None = None) -> str:
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


@needs_promtool
def test_prometheus_config_and_rules_are_valid():
    assert "4 rules found" in run(
        "promtool", "check", "rules", "crawldash-alerts.yml", cwd=PROMETHEUS
    )
    run("promtool", "check", "config", "prometheus.yml", cwd=PROMETHEUS)


@needs_promtool
def test_alerts_fire_when_the_crawl_stops_or_drops():
    assert "SUCCESS" in run(
        "promtool", "test", "rules", "crawldash-alerts.test.yml", cwd=PROMETHEUS
    )


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
    assert exec_start.split()[1] in {"serve", "bitnodes-status"}
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze missing: the unit's syntax is not checked")
    installed = Path(sys.executable).parent / "crawldash"  # this checkout's console script
    copy = tmp_path / unit.name
    copy.write_text(text.replace("/opt/crawldash/.venv/bin/crawldash", str(installed)))
    run("systemd-analyze", "verify", "--man=no", str(copy))
