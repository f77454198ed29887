"""The presence store at full size, in its own process (``python -m bench.studies.presence``), so
that the memory it adds is its own."""

from __future__ import annotations

import subprocess

import msgspec

from bench.config import REPO
from bench.context import Bench
from bench.rows import Measure, Row
from bench.servers import PY


def run(bench: Bench) -> list[Row]:
    crawls = str(bench.config.presence_crawls)
    out = subprocess.run(
        [PY, "-m", "bench.studies.presence", "--json", crawls],
        check=True,
        capture_output=True,
        cwd=REPO,
    ).stdout
    return list(msgspec.json.decode(out, type=list[Measure]))
