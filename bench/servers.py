"""Starting the servers measured, and asking them things."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import msgspec

from bench.load import Sample, children, cpu_seconds, wait_ready, wrk

PY = sys.executable
HERE = Path(__file__).parent
SERVER_CORE = "1"  # servers' core; wrk and this driver run on core 0
BOTH_CORES = "0,1"
POLL = 0.01  # seconds between two looks at /api/status while waiting


class Status(msgspec.Struct):
    """What the waits read of /api/status."""

    snapshot_timestamp: int | None
    history_complete: bool


@contextmanager
def server(
    command: list[str],
    ready: str,
    log: Path,
    cores: str = SERVER_CORE,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """The command run on ``cores`` (in ``cwd``, with ``env``), once ``ready`` answers; its
    output appended to ``log``; stopped (SIGTERM, then SIGKILL after 20 s) on leaving."""
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(command)}\n".encode())
        out.flush()
        process = subprocess.Popen(
            ["taskset", "-c", cores, *command], stdout=out, stderr=out, cwd=cwd, env=env
        )
        try:
            try:
                wait_ready(ready, process=process)
            except RuntimeError as error:
                raise RuntimeError(f"{error}; its output: {log}\n{tail(log)}") from None
            yield process
        finally:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def tail(log: Path, lines: int = 15) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def crawldash(data_dir: Path, port: int, state: Path, *extra: str) -> list[str]:
    """crawldash as the README's serve command starts it, with its defaults."""
    where = ["--data-dir", str(data_dir), "--state-dir", str(state), "--port", str(port)]
    return [PY, "-m", "crawldash", "serve", *where, *extra]


def get(url: str, headers: dict[str, str] | None = None) -> tuple[dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(response.headers), bytes(response.read())


def status(base: str) -> Status:
    return msgspec.json.decode(get(base + "/api/status")[1], type=Status)


def wait_history(base: str, within: float = 3600) -> float:
    """Seconds until /api/status says the history is complete."""
    started = time.monotonic()
    while not status(base).history_complete:
        if time.monotonic() - started > within:
            raise RuntimeError(f"history not complete within {within:.0f} s")
        time.sleep(0.02)
    return time.monotonic() - started


def wait_served(base: str, timestamp: int, since: float, within: float) -> float | None:
    """Seconds from ``since`` (a time.monotonic()) until /api/status names the crawl
    ``timestamp`` as the one served; None if it does not within ``within`` seconds."""
    while status(base).snapshot_timestamp != timestamp:
        if time.monotonic() - since > within:
            return None
        time.sleep(POLL)
    return time.monotonic() - since


def wait_whole(base: str, timestamp: int, within: float) -> None:
    """Wait until crawldash serves the crawl ``timestamp`` whole: what follows a crawl
    (its compressed codings, its CSV records) comes once the loader is done with it, and
    a CSV asked for meanwhile is answered then (a crawl written before that would wait
    behind the load)."""
    started = time.monotonic()
    while time.monotonic() - started < within:
        headers, _ = get(base + "/api/nodes?country=ZZ&format=csv")
        if headers.get("Content-Disposition", "").endswith(f'-{timestamp}.csv"'):
            return
        time.sleep(POLL)


def measure(url: str, pid: int, headers: dict[str, str], runs: int, seconds: int) -> list[Sample]:
    return [wrk(url, pid, seconds, headers) for _ in range(runs)]


def measure_slow(
    url: str, pid: int, headers: dict[str, str], runs: int, seconds: int, quick: bool
) -> list[Sample]:
    """For a server that takes a tenth of a second or more per request: 2 connections, at
    least 15 s a run and 4 of its request times (when quick: 2 s, 2 request times)."""
    shortest, times = (2, 2) if quick else (15, 4)
    samples = []
    for _ in range(runs):
        started = time.monotonic()
        get(url, headers)  # and wait out requests left running by a closed socket
        took = time.monotonic() - started
        length = max(seconds, shortest, int(times * took) + 1)
        samples.append(wrk(url, pid, length, headers, connections=2))
    return samples


@dataclass(frozen=True)
class Target:
    """A server measured: where it answers and the process whose CPU time is counted."""

    base: str  # http://host:port, no trailing slash
    pid: int


@dataclass(frozen=True)
class Ask:
    """One request measured: its path (with any query) and headers."""

    path: str
    headers: dict[str, str]


class Pairing(NamedTuple):
    """One request's runs on ours and the ceiling's, alternately."""

    ours: list[Sample]
    ceiling: list[Sample]


def paired(ours: Target, ceiling: Target, asks: list[Ask], pairs: int) -> list[Pairing]:
    """For each request, ``pairs`` runs of one second on ``ours``, each followed by one on
    the ceiling with the same request (the same path and headers: what aiohttp spends on
    a request's bytes is the framework's, not crawldash's). A shared machine's speed drifts
    within seconds, so each ratio compares runs made a second apart; and the rounds go over
    every request in turn, so that a slow stretch of the machine falls on all of them alike
    rather than on those measured last."""
    found = [Pairing([], []) for _ in asks]
    for _ in range(pairs):
        for ask, pairing in zip(asks, found, strict=True):
            pairing.ours.append(wrk(ours.base + ask.path, ours.pid, 1, ask.headers))
            pairing.ceiling.append(wrk(ceiling.base + ask.path, ceiling.pid, 1, ask.headers))
    return found


def wait_idle(pid: int, within: float = 120.0, window: float = 0.5, busy: float = 0.05) -> float:
    """Seconds until the process and its children use less than ``busy`` of a core over
    ``window`` (a server may go on answering requests that wrk has left behind); at most
    ``within``."""
    started = time.monotonic()
    while time.monotonic() - started < within:
        before = cpu_seconds(children(pid))
        time.sleep(window)
        if cpu_seconds(children(pid)) - before < busy * window:
            break
    return time.monotonic() - started


def median(values: list[float]) -> float:
    return float(statistics.median(values))


@contextmanager
def spinners(count: int | None = None) -> Iterator[list[int]]:
    """One CPU-bound process per core (``while True: pass``) at nice 0, left to the
    scheduler on every core, in a session of their own as a crawler's service runs (Linux
    shares a busy core between sessions, or services, first); killed on leaving."""
    every = ",".join(str(core) for core in range(os.cpu_count() or 1))
    loop = [PY, "-c", "while True: pass"]
    processes = [
        subprocess.Popen(["taskset", "-c", every, *loop], start_new_session=True)
        for _ in range(count or os.cpu_count() or 1)
    ]
    try:
        yield [p.pid for p in processes]
    finally:
        for process in processes:
            process.kill()
            process.wait()
