"""The features the shipped units leave off, turned on as the drop-ins in examples/systemd/
do: each drop-in passes ``systemd-analyze verify`` and keeps its unit hardened, and each
does what it says as the units run it: two users (setpriv), the units' own settings and
folders, and the units' file system as ``ProtectSystem=strict`` makes it (every mount
read-only in a mount namespace of the process's own, but for /dev, /proc, /sys and the
unit's ``ReadWritePaths``, ``StateDirectory`` and ``RuntimeDirectory``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from .bitcoin_peers import bitcoin_node, listening
from .factories import export_body, rows, write_snapshot
from .process import SYSTEM_PYTHON, serving, shared_folder, wait_until
from .test_bridge import REDIS, redis_port  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow
UNITS = Path(__file__).resolve().parent.parent / "examples" / "systemd"
DROPINS = sorted(path.relative_to(UNITS) for path in UNITS.glob("*.service.d/*.conf"))
BITNODES, CRAWLDASH, CHECKS_GROUP = 65533, 65534, 65532  # two users, and the folder's group
GROUPS = {"crawldash-checks": CHECKS_GROUP}
EXPORT = "/home/bitnodes/bitnodes/data/export/f9beb4d9"
TS = 1_700_000_000
# The unit's file system: every mount read-only but the API file systems, then each
# writable path bound over itself read-write; then the command.
STRICT = """set -e
findmnt -rn -o TARGET | sort -u | while read -r mount; do
  case "$mount" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*) ;;
  *) mount -o remount,bind,ro "$mount" ;; esac
done
while [ "$1" != "--" ]; do mount --bind "$1" "$1"; mount -o remount,bind,rw "$1"; shift; done
shift
exec "$@"
"""
needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze (Debian systemd) missing"
)
needs_namespaces = pytest.mark.skipif(
    shutil.which("unshare") is None or shutil.which("setpriv") is None or os.geteuid() != 0,
    reason="needs root, unshare and setpriv to run a process as a unit would",
)


def unit_settings(unit: str, *dropins: str) -> dict[str, list[str]]:
    """The ``[Service]`` settings of a shipped unit with drop-ins of its folder, as systemd
    merges them: each assignment adds to its setting, an empty one resets it."""
    settings: dict[str, list[str]] = {}
    for path in [UNITS / unit, *(UNITS / f"{unit}.d" / name for name in dropins)]:
        section = ""
        for line in path.read_text().splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line
            elif line and not line.startswith("#") and section == "[Service]":
                key, _, value = line.partition("=")
                settings[key] = [*settings.get(key, []), value] if value else []
    return settings


def environment(settings: dict[str, list[str]]) -> dict[str, str]:
    return dict(value.split("=", 1) for value in settings.get("Environment", []))


def writable(settings: dict[str, list[str]]) -> list[str]:
    """What ``ProtectSystem=strict`` leaves writable: ``ReadWritePaths``, and the state
    and runtime folders systemd makes."""
    paths = [value.lstrip("-") for value in settings.get("ReadWritePaths", [])]
    paths += [f"/var/lib/{name}" for name in settings.get("StateDirectory", [])]
    return paths + [f"/run/{name}" for name in settings.get("RuntimeDirectory", [])]


class Placed:
    """The units' folders put in a fresh folder of this test's, each made as the units'
    comments and docs/operating.md say (owner, group, mode)."""

    def __init__(self) -> None:
        self.root = shared_folder()
        self.folders: dict[str, Path] = {}

    def make(self, unit_path: str, owner: int, group: int, mode: int) -> Path:
        folder = self.root / unit_path.strip("/")  # its name kept: the magic's, say
        folder.mkdir(parents=True)
        os.chown(folder, owner, group)
        folder.chmod(mode)
        self.folders[unit_path] = folder
        return folder

    def __call__(self, value: str) -> str:
        """``value`` with each unit folder it names replaced by its place, in one pass."""
        if not self.folders:
            return value
        names = sorted(self.folders, key=len, reverse=True)  # the longest first
        pattern = "|".join(map(re.escape, names))
        return re.sub(pattern, lambda found: str(self.folders[found.group()]), value)


def as_unit(settings: dict[str, list[str]], placed: Placed) -> dict[str, Any]:
    """``serving()``/Popen arguments that run crawldash as the unit would: its user and
    supplementary groups, its file system, its environment (its folders placed)."""
    user = {"crawldash": CRAWLDASH, "bitnodes": BITNODES}[settings["User"][0]]
    groups = [str(GROUPS[name]) for name in settings.get("SupplementaryGroups", [])]
    who = ["setpriv", "--reuid", str(user), "--regid", str(user)]
    who += ["--groups", ",".join(groups)] if groups else ["--clear-groups"]
    paths = [placed(path) for path in writable(settings)]
    strict = ["unshare", "-m", "--propagation", "private", "--", "sh", "-c", STRICT, "strict"]
    packages = [path for path in sys.path if path.endswith("site-packages")]
    root = str(Path(__file__).resolve().parent.parent)
    env = {key: placed(value) for key, value in environment(settings).items()}
    env["PYTHONPATH"] = os.pathsep.join([root, *packages])
    return {"prefix": [*strict, *paths, "--", *who], "python": SYSTEM_PYTHON, "env": env}


def run_as(arguments: dict[str, Any], *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*arguments["prefix"], *command],
        env={**os.environ, **arguments["env"]},
        capture_output=True,
        text=True,
        timeout=120,
    )


@needs_systemd_analyze
@pytest.mark.parametrize("dropin", DROPINS, ids=str)
def test_each_dropin_passes_systemd_analyze(dropin: Path, tmp_path: Path):
    """systemd reads the drop-in with its unit: no key it does not know, no warning."""
    unit = dropin.parent.name.removesuffix(".d")
    installed = Path(sys.executable).parent / "crawldash"  # this checkout's console script
    text = (UNITS / unit).read_text()
    (tmp_path / unit).write_text(text.replace("/opt/crawldash/.venv/bin/crawldash", str(installed)))
    (tmp_path / f"{unit}.d").mkdir()
    shutil.copy(UNITS / dropin, tmp_path / dropin)
    verify = ["systemd-analyze", "verify", "--man=no", str(tmp_path / unit)]
    result = subprocess.run(verify, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")
    security = ["systemd-analyze", "security", "--offline=true", str(tmp_path / unit)]
    report = subprocess.run(security, capture_output=True, text=True, timeout=60).stdout
    exposure = float(report.split("Overall exposure level for ")[1].split()[1])
    assert exposure < 5.0, report
    if dropin.name == "live-check.conf":  # systemd sees the wider allow list
        assert "IP address allow list with non-localhost entries" in report


def test_each_folder_a_dropin_names_is_writable_under_its_unit():
    """Under ProtectSystem=strict a folder outside ReadWritePaths is read-only: each
    folder a drop-in gives crawldash (its environment's *_DIR) is one the unit may write."""
    for dropin in DROPINS:
        unit = dropin.parent.name.removesuffix(".d")
        settings = unit_settings(unit, dropin.name)
        assert settings["ProtectSystem"] == ["strict"]
        named = {v for k, v in environment(settings).items() if k.endswith("_DIR")}
        ours = named - set(environment(unit_settings(unit)).values())
        assert ours <= set(writable(settings)), dropin
        assert ours or dropin.name == "live-check.conf", dropin  # which writes no folder
    live = unit_settings("crawldash.service", "live-check.conf")
    assert "any" in live["IPAddressAllow"]  # the check connects out to public addresses
    assert environment(live)["CRAWLDASH_LIVE_CHECK"] == "main"
    backfill = unit_settings("crawldash-archive.service")
    archive = unit_settings("crawldash.service", "archive.conf")
    assert backfill["User"] == archive["User"] == ["crawldash"]  # one owner for the archive
    shared = ("CRAWLDASH_DATA_DIR", "CRAWLDASH_ARCHIVE_DIR")
    assert [environment(backfill)[k] for k in shared] == [environment(archive)[k] for k in shared]


@contextlib.contextmanager
def bitcoin_peer() -> Iterator[int]:
    """A node on loopback (python-bitcoinlib's messages), in a thread of its own; its port."""
    loop = asyncio.new_event_loop()
    ready: asyncio.Future[int] = loop.create_future()
    stop = asyncio.Event()

    async def run() -> None:
        async with listening(bitcoin_node("/Satoshi:27.1.0/", 905_123, 1033)) as peer:
            ready.set_result(peer.port)
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(run(),))
    thread.start()
    try:
        yield asyncio.run_coroutine_threadsafe(asyncio.wait_for(ready, 10), loop).result(20)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(20)
        loop.close()


@needs_namespaces
@pytest.mark.skipif(REDIS is None, reason="redis-server (Debian redis-server) missing")
def test_the_live_check_and_its_handoff_as_the_units_run_them(redis_port: int):  # noqa: F811
    placed = Placed()
    export = placed.make(EXPORT, BITNODES, BITNODES, 0o755)
    placed.make("/var/lib/crawldash", CRAWLDASH, CRAWLDASH, 0o755)
    placed.make("/run/crawldash-bitnodes", BITNODES, BITNODES, 0o755)
    placed.make("/var/lib/crawldash-bitnodes", BITNODES, BITNODES, 0o755)
    checks = placed.make("/var/lib/crawldash-checks", CRAWLDASH, CHECKS_GROUP, 0o2770)
    write_snapshot(export, int(time.time()) - 60, export_body(rows(3)))

    bridge_unit = unit_settings("crawldash-bitnodes-status.service", "check-handoff.conf")
    bridge_as = as_unit(bridge_unit, placed)
    # without its drop-in's ReadWritePaths, the bridge's unit could not empty the folder
    plain = unit_settings("crawldash-bitnodes-status.service")
    plain["SupplementaryGroups"] = bridge_unit["SupplementaryGroups"]
    probe = ["sh", "-c", f"touch {checks}/probe && rm {checks}/probe"]
    assert "Read-only file system" in run_as(as_unit(plain, placed), *probe).stderr
    assert run_as(bridge_as, *probe).returncode == 0

    dropins = ("live-check.conf", "check-handoff.conf")
    serve_as = as_unit(unit_settings("crawldash.service", *dropins), placed)
    serve_as["env"].pop("CRAWLDASH_PORT")  # serving() picks a free one
    serve_as["env"]["CRAWLDASH_LIVE_CHECK_ALLOW"] = "127.0.0.0/8"  # the test's node's range
    state = Path(serve_as["env"]["CRAWLDASH_STATE_DIR"])
    with bitcoin_peer() as port, serving(export, state, **serve_as) as base:
        form = urllib.parse.urlencode({"address": "127.0.0.1", "port": port}).encode()
        with urllib.request.urlopen(f"{base}/api/v1/checknode/", form, timeout=30) as answer:
            body = json.load(answer)
        assert (body["success"], body["user_agent"]) == (True, "/Satoshi:27.1.0/")
        wait_until(lambda: any(checks.iterdir()))
    (left,) = checks.iterdir()
    info = left.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (CRAWLDASH, CHECKS_GROUP, 0o640)

    bridge_as["env"]["CRAWLDASH_REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
    bridge_as["env"]["CRAWLDASH_CHECK_HANDOFF_INTERVAL"] = "0.2"
    command = [*bridge_as["prefix"], bridge_as["python"], "-m", "crawldash", "bitnodes-status"]
    env = {**os.environ, **bridge_as["env"]}
    bridge = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    client = redis.Redis(port=redis_port)
    try:
        wait_until(lambda: client.zrange("check", 0, -1) == [b'["127.0.0.1", %d, 1033]' % port])
        wait_until(lambda: not any(checks.iterdir()))  # handed over, and removed
    finally:
        bridge.terminate()
        _, stderr = bridge.communicate(timeout=10)
    assert "Traceback" not in stderr, stderr
    assert "ermission" not in stderr, stderr


@needs_namespaces
def test_the_archive_and_its_backfill_as_the_units_run_them():
    pytest.importorskip("pyarrow")
    placed = Placed()
    export = placed.make(EXPORT, BITNODES, BITNODES, 0o755)
    placed.make("/var/lib/crawldash", CRAWLDASH, CRAWLDASH, 0o755)
    placed.make("/run/crawldash-bitnodes", BITNODES, BITNODES, 0o755)
    placed.make("/var/lib/crawldash-bitnodes", BITNODES, BITNODES, 0o755)
    archive = placed.make("/srv/crawldash/archive", CRAWLDASH, CRAWLDASH, 0o755)
    now = int(time.time()) // 600 * 600
    for index in range(3):
        write_snapshot(export, now - 2400 + 600 * index, export_body(rows(5 + index)))

    backfill = as_unit(unit_settings("crawldash-archive.service"), placed)
    done = run_as(backfill, backfill["python"], "-m", "crawldash", "archive")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    made = list(archive.rglob("*"))
    assert made
    assert {path.stat().st_uid for path in made} == {CRAWLDASH}

    # without its drop-in's ReadWritePaths, crawldash's unit could not write the archive
    probe = ["sh", "-c", f"touch {archive}/probe && rm {archive}/probe"]
    denied = run_as(as_unit(unit_settings("crawldash.service"), placed), *probe)
    assert "Read-only file system" in denied.stderr
    serve_as = as_unit(unit_settings("crawldash.service", "archive.conf"), placed)
    assert run_as(serve_as, *probe).returncode == 0
    serve_as["env"].pop("CRAWLDASH_PORT")
    state = Path(serve_as["env"]["CRAWLDASH_STATE_DIR"])
    with serving(export, state, **serve_as) as base:

        def archived() -> tuple[float, float]:
            with urllib.request.urlopen(f"{base}/metrics", timeout=5) as response:
                text = response.read().decode()
            values = dict(line.rsplit(" ", 1) for line in text.splitlines() if line[:1] != "#")
            crawls = 'crawldash_archive_crawls{network="main"}'
            failing = 'crawldash_archive_failing{network="main"}'
            return float(values.get(crawls, -1)), float(values.get(failing, -1))

        wait_until(lambda: archived() == (3.0, 0.0))
        write_snapshot(export, now - 600, export_body(rows(9)))  # the server archives it
        wait_until(lambda: archived() == (4.0, 0.0))
    assert {path.stat().st_uid for path in archive.rglob("*")} == {CRAWLDASH}
