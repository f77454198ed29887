"""The Parquet archive (``--archive-dir``, docs/archive.md): a complete day of 144
real-size crawls in bitnodes' export shape archived by ``crawldash archive``, its bytes
against the JSON's and its speed (with its defaults: a process per core) against one
process's msgspec decode of the same files (on core 1); the first answer of a crawl
pruned from the folder, and a repeat; and written -> served with and without
``--archive-dir``, in the same run."""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from bench import data
from bench.config import Config
from bench.context import Bench, Running, emptied
from bench.data import write_crawl
from bench.export_shape import shaped_crawls
from bench.load import children
from bench.rows import Measure, Row, Section, Shape, Unit
from bench.scenarios.writing import SETTLE, Delays
from bench.servers import (
    BOTH_CORES,
    HERE,
    PY,
    SERVER_CORE,
    get,
    spinners,
    wait_history,
    wait_served,
    wait_whole,
)

DAY = 86_400
CRAWLS_A_DAY = 144
NODES = data.NODES
BYTES_LIMIT = 3.0  # % of the JSON's bytes a complete day may take
FIRST_ANSWER_LIMIT = 500.0  # ms
IDLE_ALREADY = 0.02  # seconds: a wait this short found the loader idle
IDLE_WITHIN = 60.0  # seconds the loader is waited for at most before each write
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
    """Written -> served of new crawls, crawldash without and with --archive-dir, quiet and
    with every core busy (``spinners``), crawldash on either core as a user starts it.

    As a crawl ten minutes after the one before finds crawldash, in both rows alike: each
    crawl is written once the one before is served whole and the loader is idle again (its
    archiving, with --archive-dir, done; the spinners stopped meanwhile, so that it ends as
    it would in ten minutes), and the archive holds the folder's crawls before the server
    starts (``crawldash archive``, as docs/archive.md tells operators to run first)."""
    config = bench.config
    folder = emptied(root / "fresh")
    archive = root / "archive-fresh"
    end = int(time.time()) // data.INTERVAL * data.INTERVAL - 5 * config.tries * data.INTERVAL
    following = data.real_size_history(folder, 4, 2, end, 4 * config.tries)
    crawls = iter([(crawl.timestamp, crawl.body()) for crawl in following])
    rows: list[Row] = []
    for busy in (False, True):
        for extra in ((), ("--archive-dir", str(archive))):
            state = emptied(root / f"state-fresh-{len(rows)}")
            these = list(islice(crawls, config.tries))
            catch_up(folder, archive)
            with bench.crawldash(state, *extra, data_dir=folder, cores=BOTH_CORES) as running:
                wait_history(running.base)
                time.sleep(2)  # the loader process runs
                loader = Loader(running.pid, set(children(running.pid)))
                with contextlib.ExitStack() as stack:
                    loader.paused = stack.enter_context(spinners()) if busy else []
                    delays, waited = served_one_by_one(running, loader, folder, these, config)
            rows.append(fresh_row(delays, waited, bool(extra), busy, config.tries))
    return rows


def catch_up(folder: Path, archive: Path) -> None:
    """The archive made to hold the folder's crawls (``crawldash archive``)."""
    command = [PY, "-m", "crawldash", "archive", "--data-dir", str(folder)]
    subprocess.run([*command, "--archive-dir", str(archive)], check=True, capture_output=True)


@dataclass
class Loader:
    """crawldash's processes at its start, and what is paused while the loader is waited
    for (the spinners)."""

    pid: int
    started: set[int]
    paused: list[int] = field(default_factory=list)

    def wait_idle(self, within: float) -> float:
        """Seconds until crawldash runs no process but those it ran at its start (the
        loader's children: a load, an archiving after it), at most ``within``."""
        since = time.monotonic()
        self._signal(signal.SIGSTOP)
        try:
            while self._running() and time.monotonic() - since < within:
                time.sleep(0.01)
        finally:
            self._signal(signal.SIGCONT)
        return time.monotonic() - since

    def _running(self) -> list[int]:
        """crawldash's processes started since, but those ended (an ended archiving is
        a zombie until the loader's next call reaps it)."""
        return [pid for pid in set(children(self.pid)) - self.started if not _ended(pid)]

    def _signal(self, number: int) -> None:
        for pid in self.paused:
            os.kill(pid, number)


def _ended(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


def served_one_by_one(
    running: Running,
    loader: Loader,
    folder: Path,
    crawls: list[tuple[int, bytes]],
    config: Config,
) -> tuple[Delays, list[float]]:
    """``written_to_served``, each crawl written once the loader is idle; the seconds
    waited for that, crawl by crawl."""
    waited: list[float] = []
    seconds, late = [], 0
    for timestamp, body in crawls:
        waited.append(loader.wait_idle(IDLE_WITHIN))
        write_crawl(folder, timestamp, body)
        served = wait_served(running.base, timestamp, time.monotonic(), config.wait_limit)
        late += served is None
        seconds.append(config.wait_limit if served is None else served)
        wait_whole(running.base, timestamp, config.wait_limit)
        time.sleep(SETTLE)
    return Delays(tuple(seconds), late, config.wait_limit), waited


def fresh_row(
    delays: Delays, waited: list[float], archive: bool, busy: bool, tries: int
) -> Measure:
    still = sum(1 for seconds in waited if seconds > IDLE_ALREADY)
    note = (
        f"the loader still busy with the crawl before (served whole) at {still} of {tries} "
        f"writes, waited for: median {statistics.median(waited) * 1000:.0f} ms, "
        f"worst {max(waited) * 1000:.0f} ms"
    )
    return Measure(
        Section.FRESHNESS,
        f"new 15,000-node snapshot written -> served {'with' if archive else 'without'} "
        f"--archive-dir{', every core busy' if busy else ''}, median / worst of {tries}",
        (delays.median * 1000, delays.worst * 1000),
        Unit.MS,
        0,
        Shape.SLASHED,
        details="; ".join(filter(None, [note, delays.note()])),
    )
