"""Before serving: the process's limits, and settings that would fail later refused now,
each in one line."""

from __future__ import annotations

import ctypes
import ipaddress
import os
import resource
import tempfile
from pathlib import Path

from ..settings.serve import StartupError

MAX_DEFAULT_CONNECTIONS = 10_000
MALLOC_ARENAS = 2  # glibc's own cap is 8 per core
_M_ARENA_MAX = -8  # glibc's mallopt parameter for that cap


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


def limit_malloc_arenas(environ: dict[str, str] | None = None) -> int | None:
    """Cap glibc's malloc arenas at MALLOC_ARENAS, unless MALLOC_ARENA_MAX is set (glibc
    reads it itself). Each thread that allocates (the default executor's, each network's
    watcher) would take an arena of its own and keep in it what a passing task freed, so
    each network's threads would add memory of their own. Threads hold the GIL while they
    allocate, so they hardly contend for the two arenas.

    Args:
        environ: the environment (``os.environ`` if None).

    Returns:
        The cap set, or None if the operator set one, or this is not glibc.
    """
    if "MALLOC_ARENA_MAX" in (os.environ if environ is None else environ):
        return None
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)  # glibc's; musl has none
    if mallopt is None or not mallopt(_M_ARENA_MAX, MALLOC_ARENAS):
        return None
    return MALLOC_ARENAS


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
