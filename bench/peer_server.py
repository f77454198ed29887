"""alt-bitnodes (github.com/ifuensan/alt-bitnodes), the peer ``make bench`` runs beside
crawldash: its source, a virtualenv of its own requirements, and a Redis filled as
bitnodes fills it. Nothing of it is in this repository: the source is checked out from a
git mirror or directory (BENCH_ALT_BITNODES, else the fetched mirror under /work/.mirror),
and the virtualenv is built under the bench's cache (BENCH_CACHE, else
~/.cache/crawldash-bench), once per requirements file.

Each step that cannot be done raises ``Unavailable`` saying why, which the scenario turns
into a "skipped: why" line.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import msgspec

MIRROR = Path("/work/.mirror/ifuensan+alt-bitnodes/repo")  # where the `fetch` tool puts it
REPOSITORY = "https://github.com/ifuensan/alt-bitnodes"


class Unavailable(Exception):
    """alt-bitnodes cannot be run here; the message says why."""


def cache_dir(env: Mapping[str, str]) -> Path:
    default = Path.home() / ".cache" / "crawldash-bench"
    return Path(env.get("BENCH_CACHE", str(default)))


def source(env: Mapping[str, str]) -> Path:
    """A directory holding alt-bitnodes' files: BENCH_ALT_BITNODES if it is a checkout,
    else a copy of the newest commit of the git directory it names (or of the mirror)."""
    given = env.get("BENCH_ALT_BITNODES")
    place = Path(given) if given else MIRROR
    if (place / "app.py").is_file():
        return place
    if not place.exists():
        raise Unavailable(
            f"alt-bitnodes' source not found at {place}: set BENCH_ALT_BITNODES to a clone "
            f"(git clone {REPOSITORY})"
        )
    git = ["git", "--git-dir", str(place if (place / "HEAD").is_file() else place / ".git")]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        raise Unavailable(f"{place} is neither a checkout nor a git directory: {head.stderr}")
    commit = head.stdout.strip()
    target = cache_dir(env) / f"alt-bitnodes-{commit[:12]}"
    if not (target / "app.py").is_file():
        archive = subprocess.run([*git, "archive", commit], capture_output=True, check=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(target, filter="data")
    return target


def virtualenv(checkout: Path, env: Mapping[str, str]) -> Path:
    """The bin/ folder of a virtualenv with alt-bitnodes' requirements, made if missing."""
    requirements = checkout / "requirements.txt"
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:12]
    venv = cache_dir(env) / f"alt-bitnodes-venv-{digest}"
    if not (venv / ".complete").exists():
        shutil.rmtree(venv, ignore_errors=True)
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(venv / "bin" / "pip"), "install", "-q", "-r", str(requirements)],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                raise Unavailable(f"{' '.join(step[:3])} failed: {' / '.join(tail)}")
        (venv / ".complete").touch()
    return venv / "bin"


def command(bin_dir: Path, port: int) -> list[str]:
    """As its service file starts it: one uvicorn worker."""
    return [str(bin_dir / "uvicorn"), "app:app", "--host", "127.0.0.1", "--port", str(port)]


def environment(export_dir: Path, redis_port: int, data: Path) -> dict[str, str]:
    """Its environment: the export folder, the Redis, and its own files under ``data``."""
    names = ("WINDOW_STATS", "SERVICES_SERIES", "UNIQUE_STATS")
    files = {f"BITNODES_{name}_FILE": str(data / f"{name.lower()}.json") for name in names}
    return {
        **os.environ,
        "BITNODES_EXPORT_DIR": str(export_dir),
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "BITNODES_ARCHIVE_DIR": str(data / "archive"),
        "BITNODES_PROPAGATION_DIR": str(data / "propagation"),
        **files,
    }


@contextmanager
def redis_server(folder: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """A redis-server of its own on ``port``, nothing saved; stopped on leaving."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise Unavailable("redis-server is not installed (apt-get install redis-server)")
    import redis

    arguments = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(folder)]
    process = subprocess.Popen([binary, *arguments], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=port).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise Unavailable("redis-server did not answer within 10 s") from None
                time.sleep(0.05)
        yield process
    finally:
        process.terminate()
        process.wait()


def fill_redis(port: int, crawl: bytes) -> int:
    """The keys alt-bitnodes reads, as bitnodes' crawler leaves them for a crawl: each
    node in ``opendata`` (its JSON ``[address, port, version, user agent, connected since,
    services]`` scored by its last ping) and its ``height:<address>-<port>-<services>``.
    Returns the nodes written."""
    import redis

    rows = msgspec.json.decode(crawl, type=list[list[object]])
    pipe = redis.Redis(port=port).pipeline(transaction=False)
    now = int(time.time())
    for row in rows:
        pipe.zadd("opendata", {json.dumps(row[:6]): now})
        pipe.set(f"height:{row[0]}-{row[1]}-{row[5]}", str(row[6]))
    pipe.execute()
    return len(rows)
