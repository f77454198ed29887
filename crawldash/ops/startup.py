"""Before serving: the process's limits, and settings that would fail later refused now,
each in one line."""

from __future__ import annotations

import ipaddress
import resource
import tempfile
from pathlib import Path

from ..settings.serve import StartupError

MAX_DEFAULT_CONNECTIONS = 10_000


def raise_open_file_limit() -> int:
    """Raise this process's soft limit of open files to its hard limit; the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


def default_max_connections(open_files: int) -> int:
    """Half the open-file limit (the rest is for crawl files, the loader, the index), at
    most 10,000."""
    return max(1, min(MAX_DEFAULT_CONNECTIONS, open_files // 2))


def check_can_start(state_dir: Path, max_file_size: int) -> None:
    """StartupError for a state folder that cannot be written, or a file size limit that
    memory cannot hold."""
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=state_dir).close()
    except OSError as exc:
        raise StartupError(
            f"cannot write to --state-dir {state_dir}: {exc.strerror or exc}"
        ) from None
    available = available_memory()
    if available is not None and max_file_size > available:
        raise StartupError(
            f"--max-file-size {max_file_size} bytes is more than the {available} bytes of "
            "memory available"
        )


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def available_memory() -> int | None:
    """Bytes of memory available to new work (MemAvailable), if the system says."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
