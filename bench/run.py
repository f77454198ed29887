"""``make bench``: crawldash against a naive server, aiohttp's ceiling and nginx, in one run.

Servers are pinned to core 1 and wrk to core 0. Each cell is the median of BENCH_RUNS runs
of BENCH_SECONDS seconds (3 x 5 by default); a cell compared with aiohttp's ceiling is as
many one-second runs (15 by default), each followed by one of the ceiling's. Every scenario
(bench/scenarios/) returns typed rows; bench/report.py turns them into the console's
report and BENCHMARKS.md, which a full run of every scenario rewrites.

``--quick`` (or BENCH_QUICK=1): every scenario for a few seconds, to see that none is
broken; it writes no file but the one ``--out`` names. A scenario that raises makes the
run exit 1; a target missed does not.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

from bench import data, report
from bench.config import REPO, Config
from bench.context import Bench
from bench.rows import Row
from bench.scenarios import SCENARIOS

DRIVER_CORE = 0  # this process stays off the servers' core
NEEDED = {"wrk": "wrk", "taskset": "util-linux"}


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run",
        description="Benchmark crawldash; a full run of every scenario writes BENCHMARKS.md.",
        epilog="env: BENCH_RUNS, BENCH_SECONDS (runs and seconds of each cell), BENCH_DIR "
        "(where data and logs go), BENCH_QUICK=1 (as --quick)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="every scenario for a few seconds (1 run of 1 s, fewer starts, less data); "
        "prints, and writes no file but --out's",
    )
    parser.add_argument(
        "--out", type=Path, help="write the report here (default: BENCHMARKS.md for a full run)"
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=list(SCENARIOS),
        metavar="SCENARIO",
        help="run this scenario (repeatable; one of: %(choices)s); BENCHMARKS.md is then "
        "left alone unless --out names it",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    config = Config.of(args.quick, os.environ)
    for tool, package in NEEDED.items():
        if shutil.which(tool) is None:
            sys.exit(f"make bench needs {tool}: apt-get install {package}")
    config.root.mkdir(parents=True, exist_ok=True)
    os.sched_setaffinity(0, {DRIVER_CORE})
    started = time.monotonic()
    dataset, following = data.make(
        config.root, config.history_files, config.distinct, config.big_nodes, config.later
    )
    say(f"data made in {time.monotonic() - started:.0f} s, in {config.root}")
    bench = Bench(config, dataset, following)
    rows: list[Row] = []
    broken: list[str] = []
    chosen = args.only or list(SCENARIOS)
    for name in chosen:
        began = time.monotonic()
        say(f"[{name}] ...")
        try:
            found = SCENARIOS[name](bench)
        except Exception:
            broken.append(name)
            say(f"[{name}] BROKEN after {time.monotonic() - began:.0f} s:")
            traceback.print_exc()
            continue
        rows += found
        say(f"[{name}] {len(found)} rows in {time.monotonic() - began:.0f} s")
    lines = report.body(config, rows, time.monotonic() - started)
    print()
    print("\n".join(lines))
    print()
    print("\n".join(report.targets_summary(rows)))
    out = args.out
    if out is None and not config.quick and not args.only and not broken:
        out = REPO / "BENCHMARKS.md"
    if out is not None:
        report.write_markdown(out, config, lines)
        say(f"written: {out}")
    if broken:
        say(f"broken scenarios: {', '.join(broken)} (server output: {bench.log})")
        return 1
    return 0


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
