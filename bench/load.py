"""Run wrk against a server process and read the server's own CPU and memory counters."""

from __future__ import annotations

import os
import random
import re
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
WRK_CORE = "0"  # wrk's core; servers run on the other


@dataclass(frozen=True)
class Sample:
    """One wrk run."""

    rps: float
    p50: float  # seconds
    p99: float
    cpu_per_request: float  # server CPU seconds per request
    steal: float  # share of the run's CPU time stolen by the hypervisor
    non2xx: int
    requests: int


PORTS = range(20_000, 32_768)  # below Linux's ephemeral range (ip_local_port_range)


def free_port() -> int:
    """A loopback port free now, for a server about to start. Not port 0's choice: that
    comes from the ephemeral range, where the bench's own clients (wrk, the polls) take
    their local ports too, so one could hold it by the time the server binds."""
    while True:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", random.choice(PORTS)))
            except OSError:
                continue
            return int(sock.getsockname()[1])


def cpu_seconds(pids: list[int]) -> float:
    """CPU time of the processes, with that of their children that have ended (crawldash
    starts a loader process per snapshot load); processes gone meanwhile are skipped."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += sum(int(field) for field in fields[11:15])  # utime stime cutime cstime
    return total / TICKS


def steal_and_total() -> tuple[int, int]:
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return values[7], sum(values)


def children(pid: int) -> list[int]:
    """The process and its descendants alive now."""
    found = [pid]
    try:
        kids = [k for task in Path(f"/proc/{pid}/task").iterdir() for k in _kids(task)]
    except (FileNotFoundError, ProcessLookupError):
        return []
    for kid in kids:
        found.extend(children(int(kid)))
    return found


def _kids(task: Path) -> list[str]:
    try:
        return (task / "children").read_text().split()
    except (FileNotFoundError, ProcessLookupError):
        return []


def wait_ready(
    url: str, within: float = 60, process: subprocess.Popen[bytes] | None = None
) -> float:
    """Seconds until ``url`` answers; RuntimeError past ``within``, or as soon as
    ``process`` (the server expected to answer) has exited."""
    started = time.monotonic()
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return time.monotonic() - started
        except OSError:
            if process is not None and (code := process.poll()) is not None:
                raise RuntimeError(
                    f"the server exited with status {code} before {url} answered"
                ) from None
            if time.monotonic() - started > within:
                raise RuntimeError(f"{url} did not answer within {within:.0f} s") from None
            time.sleep(0.01)


def wrk(url: str, pid: int, seconds: int, headers: dict[str, str], connections: int = 32) -> Sample:
    """``wrk -t1 -c<connections> --latency`` on WRK_CORE for ``seconds``, with the CPU time
    that the server process ``pid`` and its children spent meanwhile."""
    command = ["taskset", "-c", WRK_CORE, "wrk", "-t1", f"-c{connections}", f"-d{seconds}s"]
    command += ["--latency", "--timeout", "30s"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    pids = children(pid)
    cpu_before, (steal_before, total_before) = cpu_seconds(pids), steal_and_total()
    out = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    cpu_after, (steal_after, total_after) = cpu_seconds(pids), steal_and_total()
    requests = int(_found(r"(\d+) requests in", out))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return Sample(
        rps=float(_found(r"Requests/sec:\s+([\d.]+)", out)),
        p50=latency(out, "50%") if requests else 0.0,
        p99=latency(out, "99%") if requests else 0.0,
        cpu_per_request=(cpu_after - cpu_before) / max(requests, 1),
        steal=(steal_after - steal_before) / max(total_after - total_before, 1),
        non2xx=int(non2xx.group(1)) if non2xx else 0,
        requests=requests,
    )


def _found(pattern: str, out: str) -> str:
    match = re.search(pattern, out)
    if match is None:
        raise RuntimeError(f"wrk's output lacks {pattern!r}:\n{out}")
    return match.group(1)


def latency(out: str, percentile: str) -> float:
    match = re.search(rf"{percentile}\s+([\d.]+)(us|ms|s)", out)
    if match is None:
        raise RuntimeError(f"wrk's output lacks the {percentile} latency:\n{out}")
    return float(match.group(1)) * UNITS[match.group(2)]


def rss_mib(pid: int) -> float:
    """Resident memory of a process and all its children (crawldash's loader process, and
    the child it forks for a load while one runs): pages they share are counted in each."""
    return _memory_mib(pid, "status", "VmRSS:")


def pss_mib(pid: int) -> float:
    """The same, with each shared page divided among the processes that share it (the
    memory the tree takes from the machine)."""
    return _memory_mib(pid, "smaps_rollup", "Pss:")


def _memory_mib(pid: int, file: str, field: str) -> float:
    total = 0
    for each in children(pid):
        try:
            text = Path(f"/proc/{each}/{file}").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += sum(int(line.split()[1]) for line in text.splitlines() if line.startswith(field))
    return total / 1024
