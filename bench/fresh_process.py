"""Measurements made in a process of their own (``python -m bench.studies.presence``,
``bench.studies.trends``), so that the memory a load adds is the load's alone: both sides of that
command line."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import msgspec

from bench.report import measure_line
from bench.rows import Measure


def loaded_in_a_fresh_process(module: str, data: bytes, suffix: str) -> list[str]:
    """``python -m module --load FILE`` with ``data`` in FILE: a load measured in a process
    of its own. Returns what it printed, split into words."""
    with tempfile.NamedTemporaryFile(suffix=suffix) as file:
        file.write(data)
        file.flush()
        return subprocess.run(
            [sys.executable, "-m", module, "--load", file.name],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()


def own_rss_mib() -> float:
    """This process's resident memory."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def command_line(main: Callable[[int, int], list[Measure]], load: Callable[[str], None]) -> None:
    """A measuring module's command line: ``--load FILE`` (the child side of
    ``loaded_in_a_fresh_process``), ``--json CRAWLS NODES`` (its rows, for ``make bench``),
    or ``CRAWLS NODES`` (its rows as text)."""
    arguments = sys.argv[1:]
    if arguments[:1] == ["--load"]:
        load(arguments[1])
    elif arguments[:1] == ["--json"]:
        sys.stdout.buffer.write(msgspec.json.encode(main(*map(int, arguments[1:3]))))
    else:
        for measure in main(*map(int, arguments[:2])):
            print(measure_line(measure))
