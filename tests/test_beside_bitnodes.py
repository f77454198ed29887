"""crawldash and its bridge as the shipped systemd units run them beside bitnodes: two users,
a real redis-server, the units' own settings, and bitnodes' own rule for its newest crawl."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import redis

from .factories import export_body, rows, write_snapshot
from .helpers import bridge_command
from .process import as_nobody, serving, shared_folder, wait_until
from .test_bridge import REDIS, read, redis_port  # noqa: F401  (a fixture)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(REDIS is None, reason="redis-server (Debian redis-server) missing"),
]
UNITS = Path(__file__).resolve().parent.parent / "examples" / "systemd"
BITNODES, CRAWLDASH = 65533, 65534  # two users, neither of them root
EXPORT = "/home/bitnodes/bitnodes/data/export/f9beb4d9"
TS = 1_700_000_000


def unit_environment(name: str) -> dict[str, str]:
    """The ``Environment=`` settings of a shipped unit."""
    text = (UNITS / name).read_text()
    return dict(re.findall(r"^Environment=(\w+)=(\S+)$", text, re.MULTILINE))


def as_user(uid: int, environment: dict[str, str]) -> dict[str, Any]:
    """``serving()``/Popen arguments that run crawldash as ``uid``, as ``as_nobody`` does."""
    nobody = as_nobody()
    prefix = ["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups"]
    return {
        "prefix": prefix,
        "python": nobody["python"],
        "env": {**nobody["env"], **environment},
    }


def bitnodes_newest_crawl(export_dir: Path) -> str:
    """bitnodes' seeder.py and ping.py pick their input file this way."""
    return max(glob.iglob(f"{export_dir}/*.json"))


def test_serve_and_bridge_as_the_units_run_them(redis_port: int):  # noqa: F811
    root = shared_folder()
    export_dir, run_dir, state_dir = root / "export", root / "run", root / "state"
    for folder, owner in ((export_dir, BITNODES), (run_dir, BITNODES), (state_dir, CRAWLDASH)):
        folder.mkdir(mode=0o755)  # RuntimeDirectoryMode=0755, StateDirectory's default
        os.chown(folder, owner, owner)
    for index in range(3):
        write_snapshot(export_dir, TS + 600 * index, export_body(rows(10 + index)))
    for crawl in export_dir.iterdir():
        os.chown(crawl, BITNODES, BITNODES)

    def placed(value: str) -> str:
        value = value.replace(EXPORT, str(export_dir)).replace("/var/lib/crawldash", str(state_dir))
        return value.replace("/run/crawldash-bitnodes", str(run_dir))

    bridge_env = {
        k: placed(v) for k, v in unit_environment("crawldash-bitnodes-status.service").items()
    }
    serve_env = {k: placed(v) for k, v in unit_environment("crawldash.service").items()}
    assert Path(bridge_env["CRAWLDASH_STATUS_OUT"]) == Path(serve_env["CRAWLDASH_STATUS_FILE"])
    bridge_env["CRAWLDASH_REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
    serve_env.pop("CRAWLDASH_PORT")  # serving() picks a free one

    client = redis.Redis(port=redis_port)
    client.set("crawl:master:state", "running")
    client.sadd("pending", "a", "b")
    bridge_as = as_user(BITNODES, bridge_env)
    bridge = subprocess.Popen(
        bridge_command(python=bridge_as["python"], prefix=bridge_as["prefix"]),
        env={**os.environ, **bridge_as["env"]},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        status_file = Path(bridge_env["CRAWLDASH_STATUS_OUT"])
        wait_until(lambda: read(status_file) is not None)
        assert status_file.stat().st_uid == BITNODES
        serve_as = as_user(CRAWLDASH, serve_env)
        with serving(export_dir, state_dir, **serve_as) as base:

            def status() -> dict[str, object]:
                with urllib.request.urlopen(f"{base}/api/status", timeout=5) as response:
                    return dict(json.load(response))

            wait_until(lambda: status()["state"] == "running" and status()["queue_size"] == 2)
            client.set("crawl:master:state", "starting")  # Redis' state, through the bridge
            wait_until(lambda: status()["state"] == "starting")
        newest = bitnodes_newest_crawl(export_dir)
        assert Path(newest).name == f"{TS + 1200}.json"
        assert isinstance(json.loads(Path(newest).read_bytes()), list)  # a crawl's rows
        assert not [p.name for p in export_dir.iterdir() if not p.name[0].isdigit()]
    finally:
        bridge.terminate()
        _, stderr = bridge.communicate(timeout=10)
    assert "Traceback" not in stderr, stderr
    assert "folder of crawl files" not in stderr


def test_the_bridge_warns_when_told_to_write_among_crawls(redis_port: int, tmp_path: Path):  # noqa: F811
    """An operator who keeps an old unit (status.json in the export folder) is told why the
    seeder would break, and crawldash keeps reading it there."""
    write_snapshot(tmp_path, TS, export_body(rows(3)))
    out = tmp_path / "status.json"
    command = ["crawldash", "bitnodes-status", "--out", str(out), "--interval", "0.2"]
    command += ["--redis", f"redis://127.0.0.1:{redis_port}/0"]
    bridge = subprocess.Popen([sys.executable, "-m", *command], stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: read(out) is not None)
        assert bitnodes_newest_crawl(tmp_path).endswith("status.json")  # the harm warned of
    finally:
        bridge.terminate()
        _, stderr = bridge.communicate(timeout=10)
    assert "is in a folder of crawl files: bitnodes' seeder.py and ping.py" in stderr
