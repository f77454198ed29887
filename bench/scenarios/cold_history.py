"""A cold history of many real-size crawls: crawldash started with an empty state folder,
timed until /api/status says the history is complete, against one process decoding the
same files with msgspec; and a crawl written while the history is counted, timed until it
is served. crawldash may use both cores (counting a backlog is meant to use every core);
the decoding process is one process, pinned to core 1; one after the other. Every crawl
of the history is distinct, as a real history's are."""

from __future__ import annotations

import subprocess
import time

from bench import data
from bench.context import Bench, emptied
from bench.data import INTERVAL
from bench.rows import Measure, Row, Section, Unit
from bench.servers import BOTH_CORES, HERE, PY, SERVER_CORE, status, wait_history, wait_served
from crawldash.demo.fake_crawler import status_json

RATIO_LIMIT = 1.5  # crawldash's cold history / msgspec's decoding of the same files
SERVED_LIMIT = 1.5  # seconds from written to served while the history is counted


def run(bench: Bench) -> list[Row]:
    config = bench.config
    root = emptied(config.root / "cold-history")
    folder, state = root / "data", emptied(root / "state")
    folder.mkdir()
    end = int(time.time()) // INTERVAL * INTERVAL - INTERVAL
    # Every crawl distinct, and as varied as a real history's: crawls that share their
    # contents (hardlinks), or differ by a few nodes, count faster than a real history.
    following = data.varied_history(folder, config.cold_crawls, end, 1)
    (folder / "status.json").write_bytes(status_json(end=end))
    new = next(following)
    body = new.body()
    started = time.monotonic()
    with bench.crawldash(state, data_dir=folder, cores=BOTH_CORES) as running:
        counting = not status(running.base).history_complete
        data.write_crawl(folder, new.timestamp, body)
        served = wait_served(running.base, new.timestamp, time.monotonic(), config.wait_limit)
        wait_history(running.base)
        cold = time.monotonic() - started
    decoding_started = time.monotonic()
    out = subprocess.run(
        ["taskset", "-c", SERVER_CORE, PY, str(HERE / "decode_files.py"), str(folder)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    decoding = time.monotonic() - decoding_started
    files, inner = int(out[0]), float(out[1])
    cache = (
        "every crawl distinct: each an independent sample of 85-99% of one export's rows, "
        "in a fresh order (bench.data.varied_history)"
    )
    crawls = f"{config.cold_crawls:,} real-size crawls"
    return [
        Measure(
            Section.TARGETS,
            f"cold history of {crawls}: crawldash's start -> history complete (empty state "
            "folder, cores 0,1)",
            (cold,),
            Unit.S,
            details=f"{files:,} files with the one written meanwhile; {cache}",
        ),
        Measure(
            Section.TARGETS,
            f"msgspec.json.decode of the same {files:,} files, one process on core 1 (its "
            "start -> exit)",
            (decoding,),
            Unit.S,
            details=f"{inner:.2f} s of it decoding",
        ),
        Measure(
            Section.TARGETS,
            "cold history / msgspec decode of the same files",
            (cold / decoding,),
            Unit.RATIO,
            limits=(RATIO_LIMIT,),
        ),
        Measure(
            Section.TARGETS,
            "new 15,000-node snapshot written -> served while the cold history is counted",
            (config.wait_limit if served is None else served,),
            Unit.S,
            limits=(SERVED_LIMIT,),
            details="; ".join(
                filter(
                    None,
                    [
                        "" if counting else "the history was complete before it was written",
                        f"not served within {config.wait_limit:.0f} s" if served is None else "",
                    ],
                )
            ),
        ),
    ]
