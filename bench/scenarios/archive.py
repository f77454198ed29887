"""The Parquet archive (``--archive-dir``, docs/archive.md): a complete day of 144
real-size crawls in bitnodes' export shape archived by ``crawldash archive``, its bytes
against the JSON's and its speed (with its defaults: a process per core) against one
process's msgspec decode of the same files (on core 1); the first answer of a crawl
pruned from the folder, and a repeat; and written -> served with and without
``--archive-dir``, in the same run."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from itertools import islice
from pathlib import Path

from bench import data
from bench.context import Bench, emptied
from bench.export_shape import shaped_crawls
from bench.rows import Measure, Row, Section, Shape, Unit
from bench.scenarios.writing import written_to_served
from bench.servers import HERE, PY, SERVER_CORE, get, wait_history

DAY = 86_400
CRAWLS_A_DAY = 144
NODES = data.NODES
BYTES_LIMIT = 3.0  # % of the JSON's bytes a complete day may take
FIRST_ANSWER_LIMIT = 500.0  # ms
PRUNED_ASKED = 5  # pruned crawls asked for once each (the cache keeps 4)


def run(bench: Bench) -> list[Row]:
    root = emptied(bench.config.root / "archive")
    folder, archive = root / "data", root / "archive"
    folder.mkdir()
    json_bytes = write_day(folder)
    backfill, decode = archive_and_decode(folder, archive)
    day = next(p for p in (archive / "network=main").iterdir() if (p / "day.parquet").exists())
    archived = sum(path.stat().st_size for path in day.iterdir())
    rows: list[Row] = [
        Measure(
            Section.TARGETS,
            f"archive of a complete day ({CRAWLS_A_DAY} crawls of {NODES:,} nodes) / its JSON",
            (100 * archived / json_bytes,),
            Unit.RATIO,
            limits=(BYTES_LIMIT,),
            details=f"% of the bytes: {archived:,} of {json_bytes:,}",
        ),
        Measure(
            Section.TARGETS,
            "crawldash archive (backfill, every core) / one process's msgspec decode of the "
            "same files",
            (backfill / decode,),
            Unit.RATIO,
            details=f"{backfill:.1f} s / {decode:.1f} s for {CRAWLS_A_DAY + 1} files",
        ),
    ]
    rows += pruned_answers(bench, folder, archive, root)
    rows += with_and_without(bench, root)
    return rows


def write_day(folder: Path) -> int:
    """A complete UTC day of crawls, 600 s apart, and the next day's first; the day's bytes."""
    start = (int(time.time()) // DAY - 2) * DAY
    end = start + CRAWLS_A_DAY * data.INTERVAL  # the next day's first crawl
    total = 0
    for crawl in shaped_crawls(nodes=NODES, crawls=CRAWLS_A_DAY + 1, end=end, seed=5):
        body = crawl.body()
        data.write(folder / f"{crawl.timestamp}.json", body, crawl.timestamp)
        total += len(body) if crawl.timestamp < end else 0
    return total


def archive_and_decode(folder: Path, archive: Path) -> tuple[float, float]:
    """Seconds of ``crawldash archive`` over the folder, as a user starts it (a process per
    core), and of decode_files.py over it, one process on core 1."""
    folders = ["--data-dir", str(folder), "--archive-dir", str(archive)]
    started = time.monotonic()
    subprocess.run(
        [PY, "-m", "crawldash", "archive", *folders],
        check=True,
        capture_output=True,
    )
    backfill = time.monotonic() - started
    started = time.monotonic()
    subprocess.run(
        ["taskset", "-c", SERVER_CORE, PY, str(HERE / "decode_files.py"), str(folder)],
        check=True,
        capture_output=True,
    )
    return backfill, time.monotonic() - started


def pruned_answers(bench: Bench, folder: Path, archive: Path, root: Path) -> list[Row]:
    """The first answer of a few older crawls from their files, then, the folder pruned to
    its newest crawl, of a few others from the archive (the compacted day file), then
    each of those again (cached): one server, in turn."""
    crawls = sorted(int(p.stem) for p in folder.glob("*.json"))
    from_files = crawls[5 : 5 + PRUNED_ASKED * 20 : 20]
    pruned = crawls[15 : 15 + PRUNED_ASKED * 20 : 20]
    state = emptied(root / "state-pruned")
    with bench.crawldash(state, "--archive-dir", str(archive), data_dir=folder) as running:
        wait_history(running.base)
        time.sleep(6)  # the server's first look at the archive, and the loader's start
        files = [timed(f"{running.base}/api/v1/snapshots/{t}/") for t in from_files]
        for timestamp in crawls[:-1]:
            os.unlink(folder / f"{timestamp}.json")
        time.sleep(3)  # the watcher sees the files gone
        first = [timed(f"{running.base}/api/v1/snapshots/{t}/") for t in pruned]
        again = [timed(f"{running.base}/api/v1/snapshots/{t}/") for t in pruned[-4:]]
    return [
        Measure(
            Section.TARGETS,
            f"first answer of an older crawl: from its file / pruned, from the archive "
            f"(medians of {len(pruned)})",
            (statistics.median(files), statistics.median(first)),
            Unit.MS,
            0,
            Shape.VERSUS,
        ),
        Measure(
            Section.TARGETS,
            f"first answer of a pruned crawl, from the archive (median / worst of {len(pruned)})",
            (statistics.median(first), max(first)),
            Unit.MS,
            0,
            Shape.SLASHED,
            limits=(None, FIRST_ANSWER_LIMIT),
        ),
        Measure(
            Section.TARGETS,
            "a pruned crawl asked again (cached), median",
            (statistics.median(again),),
            Unit.MS,
            1,
        ),
    ]


def timed(url: str) -> float:
    started = time.perf_counter()
    get(url, {"Accept-Encoding": "br"})
    return (time.perf_counter() - started) * 1000


def with_and_without(bench: Bench, root: Path) -> list[Row]:
    """Written -> served of new crawls, crawldash without and with --archive-dir."""
    config = bench.config
    folder = emptied(root / "fresh")
    end = int(time.time()) // data.INTERVAL * data.INTERVAL - 3 * config.tries * data.INTERVAL
    following = data.real_size_history(folder, 4, 2, end, 2 * config.tries)
    crawls = [(crawl.timestamp, crawl.body()) for crawl in islice(following, 2 * config.tries)]
    rows: list[Row] = []
    for index, extra in enumerate(((), ("--archive-dir", str(root / "archive-fresh")))):
        state = emptied(root / f"state-fresh-{index}")
        these = crawls[index * config.tries : (index + 1) * config.tries]
        with bench.crawldash(state, *extra, data_dir=folder) as running:
            wait_history(running.base)
            time.sleep(2)  # the loader process runs
            delays = written_to_served(running.base, folder, these, config.wait_limit)
        rows.append(
            Measure(
                Section.FRESHNESS,
                f"new 15,000-node snapshot written -> served {'with' if extra else 'without'} "
                f"--archive-dir, median / worst of {config.tries}",
                (delays.median * 1000, delays.worst * 1000),
                Unit.MS,
                0,
                Shape.SLASHED,
                details=delays.note(),
            )
        )
    return rows
