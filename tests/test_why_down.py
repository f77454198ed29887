"""Why a node is DOWN, end to end as the shipped units run it: bitnodes' Redis driven
through a crawl the way crawl.py drives it, the bridge as bitnodes' user keeping the
crawl's attempts, its crawl file and export written, and crawldash as its own user naming
every reason."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import redis

from .factories import export_body, row, write_snapshot
from .helpers import bridge_command
from .process import serving, shared_folder, wait_until
from .test_beside_bitnodes import BITNODES, CRAWLDASH, EXPORT, as_user, unit_environment
from .test_bridge import REDIS, redis_port  # noqa: F401  (a fixture)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(REDIS is None, reason="redis-server (Debian redis-server) missing"),
]
BEFORE, CRAWL_END = 1_700_000_000, 1_700_000_600
EXPORTED = CRAWL_END + 90
UP, HELD_NOT, FAILED = "203.0.113.1", "203.0.113.2", "203.0.113.3"
EXCLUDED, UNSEEN = "10.1.2.3", "203.0.113.9"


def owned_folders(root: Path) -> dict[str, Path]:
    folders = {
        "export": root / "data" / "export" / "f9beb4d9",
        "crawl": root / "data" / "crawl" / "f9beb4d9",
        "run": root / "run",
        "kept": root / "bridge-state",
        "state": root / "state",
    }
    for name, folder in folders.items():
        folder.mkdir(mode=0o755, parents=True)
        owner = CRAWLDASH if name == "state" else BITNODES
        for made in (folder, *folder.parents):
            if made == root:
                break
            os.chown(made, owner, owner)
    return folders


def crawl_as_bitnodes(client: redis.Redis, attempts: list[str], reached: list[str]) -> None:
    """crawl.py's crawl: the rules, a node:* key per attempt, the reached in up."""
    client.set("crawl:master:state", "running")
    client.set("exclude-ipv4-networks", json.dumps([[int("0a000000", 16), int("ff000000", 16)]]))
    client.set("exclude-nodes", json.dumps([]))
    for host in attempts:
        client.set(f"node:{host}-8333-1033", "")
    for host in reached:
        client.sadd("up", f"node:{host}-8333-1033")
    client.delete("pending")  # every address popped: the crawl ends at the next cron


def end_crawl_as_bitnodes(client: redis.Redis, crawl_dir: Path, reached: list[str]) -> None:
    """crawl.py's cron and restart(): elapsed pushed, keys deleted, the crawl file dumped."""
    client.set("crawl:master:state", "starting")
    client.lpush("elapsed", json.dumps([CRAWL_END, 600]))
    for key in client.scan_iter(match="node:*"):
        client.delete(key)
    client.delete("up")
    crawl_file = crawl_dir / f"{CRAWL_END}.json"
    crawl_file.write_text(json.dumps([[host, 8333, 1033, 900_000] for host in reached]))
    os.chown(crawl_file, BITNODES, BITNODES)


def test_every_reason_through_the_units_as_two_users(redis_port: int):  # noqa: F811
    folders = owned_folders(shared_folder())

    def placed(value: str) -> str:
        value = value.replace(EXPORT, str(folders["export"]))
        value = value.replace("/var/lib/crawldash-bitnodes", str(folders["kept"]))
        value = value.replace("/var/lib/crawldash", str(folders["state"]))
        return value.replace("/run/crawldash-bitnodes", str(folders["run"]))

    bridge_env = {
        k: placed(v) for k, v in unit_environment("crawldash-bitnodes-status.service").items()
    }
    bridge_env |= {"CRAWLDASH_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0"}
    bridge_env |= {"CRAWLDASH_INTERVAL": "0.2"}
    serve_env = {k: placed(v) for k, v in unit_environment("crawldash.service").items()}
    serve_env.pop("CRAWLDASH_PORT")
    client = redis.Redis(port=redis_port)
    client.set("crawl:master:state", "starting")
    client.lpush("elapsed", json.dumps([BEFORE, 600]))
    bridge_as = as_user(BITNODES, bridge_env)
    bridge = subprocess.Popen(
        bridge_command(python=bridge_as["python"], prefix=bridge_as["prefix"]),
        env={**os.environ, **bridge_as["env"]},
        stderr=subprocess.PIPE,
        text=True,
    )
    said: list[str] = []
    reading = threading.Thread(target=lambda: said.extend(bridge.stderr or ()), daemon=True)
    reading.start()
    try:
        # the attempts collector runs on a thread of its own: the crawl must start after it
        # has looked, or the bridge rightly keeps it as joined under way (not complete)
        wait_until(lambda: any("following the crawl after" in line for line in said))
        crawl_as_bitnodes(client, [UP, HELD_NOT, FAILED], [UP, HELD_NOT])
        wait_until(lambda: any("every attempt seen" in line for line in said))
        end_crawl_as_bitnodes(client, folders["crawl"], [UP, HELD_NOT])
        kept = folders["kept"] / "attempts.msgpack"
        wait_until(kept.exists)
        assert kept.stat().st_uid == BITNODES
        written = write_snapshot(folders["export"], EXPORTED, export_body([row(UP)]))
        os.chown(written, BITNODES, BITNODES)
        serve_as = as_user(CRAWLDASH, serve_env)
        with serving(folders["export"], folders["state"], **serve_as) as base:

            def reason(host: str) -> tuple[str, int | None]:
                query = urllib.parse.urlencode({"address": f"{host}:8333"})
                with urllib.request.urlopen(f"{base}/api/check?{query}", timeout=5) as answer:
                    found = json.load(answer)["reason"]
                return found["code"], found["crawl"]

            wait_until(lambda: reason(FAILED)[0] == "failed")
            assert {host: reason(host) for host in (UP, HELD_NOT, FAILED, EXCLUDED, UNSEEN)} == {
                UP: ("up", EXPORTED),
                HELD_NOT: ("reached_not_held", CRAWL_END),
                FAILED: ("failed", CRAWL_END),
                EXCLUDED: ("excluded", CRAWL_END),
                UNSEEN: ("not_tried", CRAWL_END),
            }
    finally:
        bridge.terminate()
        bridge.wait(timeout=10)
        reading.join(timeout=5)
        if bridge.stderr is not None:
            bridge.stderr.close()
    assert not any("Traceback" in line for line in said), said
