"""The Parquet archive: a folder of real-shaped crawls archived by `crawldash archive` and by
the server as crawls arrive, never twice, readable after the writer is killed, compacted
per complete day; an archive that cannot be written never stops serving."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from crawldash.archive import LOADER_PRELOAD
from crawldash.archive.arriving import Target
from crawldash.archive.layout import DAY_FILE, MANIFEST, PARTS, day_of, look
from crawldash.archive.parquet import WINDOW, crawl_rows
from crawldash.archive.view import archiving_loads
from crawldash.crawl.decode import Rules
from crawldash.live.loader.client import LoaderClient
from crawldash.live.loader.new_crawl import load_new_crawl
from crawldash.live.snapshot.prepared import Half
from tests.conftest import Serve, eventually, until_served, watching
from tests.factories import export_body, rows, write_snapshot
from tests.helpers import fetch, get, write_generated
from tests.process import as_nobody, serving, shared_folder, wait_until
from tests.process import watching as answering_changes

DAY = 86_400
# The last crawl of the tests' folders: a day boundary and a week's start (a Monday) fall
# inside them, and they are in the past (crawldash refuses crawls named in the future).
END = (int(time.time()) // DAY - 3) * DAY + 3 * 3600


# The archive tests' crawls (helpers.write_generated), ending at END unless told otherwise.
write_crawls = partial(write_generated, end=END)


def archive_command(data_dir: Path, archive_dir: Path) -> list[str]:
    folders = ["--data-dir", str(data_dir), "--archive-dir", str(archive_dir)]
    return [sys.executable, "-m", "crawldash", "archive", *folders]


def run_archive(data_dir: Path, archive_dir: Path) -> str:
    """``crawldash archive`` run to its end; its standard error."""
    done = subprocess.run(
        archive_command(data_dir, archive_dir), stderr=subprocess.PIPE, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


def rows_per_crawl(archive_dir: Path) -> dict[int, int]:
    """What DuckDB reads of the archive: rows per crawl."""
    glob = f"{archive_dir}/network=main/*/*.parquet"
    query = f"SELECT timestamp, count(*) FROM read_parquet('{glob}') GROUP BY timestamp"
    return dict(duckdb.execute(query).fetchall())


def test_backfill_archives_every_crawl_once_and_compacts_complete_days(tmp_path: Path) -> None:
    data, archive = tmp_path / "data", tmp_path / "archive"
    counts = write_crawls(data, crawls=40, interval=3600)
    assert f"archived {len(counts)} crawls" in run_archive(data, archive)
    assert rows_per_crawl(archive) == counts
    days = sorted({day_of(t) for t in counts})
    for day in days[:-1]:  # complete: one file, its manifest naming its crawls
        folder = archive / "network=main" / f"date={day}"
        assert sorted(os.listdir(folder)) == [MANIFEST, DAY_FILE]
        listed = json.loads((folder / MANIFEST).read_bytes())["crawls"]
        assert sorted(map(int, listed)) == sorted(t for t in counts if day_of(t) == day)
        assert {int(t): crawl[2] for t, crawl in listed.items()} == {
            t: counts[t] for t in counts if day_of(t) == day
        }  # each crawl's nodes, for the listing once the history has let it go
    newest = archive / "network=main" / f"date={days[-1]}"
    names = set(os.listdir(newest)) - {PARTS}
    assert names == {f"part-{t}.parquet" for t in counts if day_of(t) == days[-1]}
    parts = json.loads((newest / PARTS).read_bytes())["crawls"]
    assert {int(t): crawl[2] for t, crawl in parts.items()} == {
        t: counts[t] for t in counts if day_of(t) == days[-1]
    }
    assert "archived 0 crawls" in run_archive(data, archive)
    assert rows_per_crawl(archive) == counts  # nothing twice


def test_a_day_file_holds_a_row_group_per_window_so_a_crawl_reads_one(tmp_path: Path) -> None:
    data, archive = tmp_path / "data", tmp_path / "archive"
    counts = write_crawls(data, crawls=40, interval=1800)  # 20 hours, over a day boundary
    run_archive(data, archive)
    (day,) = [d for d in (archive / "network=main").iterdir() if (d / DAY_FILE).exists()]
    metadata = pq.ParquetFile(day / DAY_FILE).metadata
    spans = []
    for index in range(metadata.num_row_groups):
        statistics = metadata.row_group(index).column(0).statistics  # timestamp
        spans.append((statistics.min, statistics.max))
        assert statistics.max // WINDOW == statistics.min // WINDOW  # one window each
    in_day = sorted(t for t in counts if day_of(t) == day.name[5:])
    assert len(spans) == len({t // WINDOW for t in in_day}) > 1
    for timestamp in in_day:  # the rows of a crawl, read back from its row group only
        rows = crawl_rows(day / DAY_FILE, timestamp)
        assert len(rows["address"]) == counts[timestamp]
        assert rows["position"] == list(range(counts[timestamp]))


def test_rows_are_typed_with_the_address_type(tmp_path: Path) -> None:
    data, archive = tmp_path / "data", tmp_path / "archive"
    write_crawls(data, crawls=30, interval=600, end=END - 12 * 3600)
    run_archive(data, archive)
    glob = f"{archive}/network=main/*/*.parquet"
    described = duckdb.execute(f"DESCRIBE SELECT * FROM read_parquet('{glob}')").fetchall()
    types = {column[0]: column[1] for column in described}
    assert types["timestamp"] == types["height"] == "BIGINT"
    assert types["services"] == "UBIGINT"  # a node may set all 64 bits
    assert types["latitude"] == types["longitude"] == "DOUBLE"
    assert types["port"] == types["position"] == "INTEGER"
    assert types["user_agent"] == types["address_type"] == "VARCHAR"
    kinds = duckdb.execute(
        f"SELECT DISTINCT address_type FROM read_parquet('{glob}') ORDER BY 1"
    ).fetchall()
    assert {kind for (kind,) in kinds} <= {"ipv4", "ipv6", "onion", "i2p", "cjdns"}
    assert ("onion",) in kinds
    assert ("ipv4",) in kinds
    tor = duckdb.execute(
        f"SELECT DISTINCT latitude, longitude, country FROM read_parquet('{glob}') "
        "WHERE address_type = 'onion'"
    ).fetchall()
    assert tor == [(0.0, 0.0, None)]


def test_a_crawl_only_folder_leaves_the_other_fields_null(tmp_path: Path) -> None:
    data, archive = tmp_path / "data", tmp_path / "archive"
    rows = [["198.51.100.7", 8333, 1033, 900_000], ["2001:db8::1", 8333, 1, 0]]
    write_snapshot(data, END, json.dumps(rows).encode())
    run_archive(data, archive)
    glob = f"{archive}/network=main/*/*.parquet"
    got = duckdb.execute(
        f"SELECT address, port, address_type, services, height, user_agent, protocol_version,"
        f" latitude FROM read_parquet('{glob}') ORDER BY address"
    ).fetchall()
    assert got == [
        ("198.51.100.7", 8333, "ipv4", 1033, 900_000, None, None, None),
        ("2001:db8::1", 8333, "ipv6", 1, 0, None, None, None),
    ]


def test_a_writer_killed_mid_run_leaves_a_readable_archive_and_a_rerun_adds_each_once(
    tmp_path: Path,
) -> None:
    data, archive = tmp_path / "data", tmp_path / "archive"
    counts = write_crawls(data, crawls=150, nodes=1500, interval=1200)
    writer = subprocess.Popen(archive_command(data, archive), stderr=subprocess.DEVNULL)
    wait_until(lambda: len(look(archive, "main").files) >= 40, within=60)
    writer.send_signal(signal.SIGKILL)
    writer.wait(10)
    archived_then = rows_per_crawl(archive)  # readable, whatever was being written
    assert 40 <= len(archived_then) < len(counts)
    assert all(counts[t] == rows for t, rows in archived_then.items())
    run_archive(data, archive)
    assert rows_per_crawl(archive) == counts
    names = [p.name for p in archive.rglob("*") if p.is_file()]
    assert not [n for n in names if n.endswith(".tmp")]


@pytest.fixture
def archive_dir(tmp_path: Path) -> Path:
    return tmp_path / "archive"


async def test_the_server_archives_each_new_crawl_and_catches_up(
    serve: Serve, data_dir: Path, archive_dir: Path
) -> None:
    counts = write_crawls(data_dir, crawls=5, end=END - 600)
    client = await serve(archive_dir=archive_dir)
    await until_served(client, max(counts))
    await watching(client)
    assert look(archive_dir, "main").files == {}  # off the loader's path at start-up
    counts |= write_crawls(data_dir, crawls=6, end=END)  # one new crawl, loaded and archived

    async def all_archived() -> bool:
        return look(archive_dir, "main").files.keys() == counts.keys()

    await until_served(client, END)
    await eventually(all_archived)
    assert rows_per_crawl(archive_dir) == counts

    async def shown() -> bool:
        metrics = await (await client.get("/metrics")).text()
        return metric(metrics, "crawldash_archive_crawls") == len(counts)

    await eventually(shown)
    metrics = await (await client.get("/metrics")).text()
    assert metric(metrics, "crawldash_archive_newest_crawl_timestamp_seconds") == END
    assert metric(metrics, "crawldash_archive_failing") == 0
    on_disk = await asyncio.to_thread(data_bytes, archive_dir)
    assert metric(metrics, "crawldash_archive_bytes") == on_disk


def test_an_unwritable_archive_is_logged_once_shown_and_serving_goes_on() -> None:
    nobody = as_nobody()
    root = shared_folder()
    try:
        data, state, archive = root / "data", root / "state", root / "archive"
        write_crawls(data, crawls=3, end=END - 1200)
        archive.mkdir(mode=0o755)  # root's: nobody cannot write in it
        state.mkdir()
        os.chown(state, 65534, 65534)
        logs: list[str] = []
        options = ("--archive-dir", str(archive), "--log-level", "info")
        with serving(data, state, *options, logs=logs, **nobody) as base:
            wait_until(lambda: answering_changes(base))
            for failed, crawl in enumerate((END - 600, END), 1):  # two failed writes
                write_crawls(data, crawls=1, end=crawl)
                wait_until(lambda: _served(base) == crawl)  # noqa: B023 - waited for here
                wait_until(lambda: _failures(base) >= failed)  # noqa: B023
            assert metric(fetch(f"{base}/metrics")[2].decode(), "crawldash_archive_failing") == 1
            assert _served(base) == END  # serving goes on
        (stderr,) = logs
        assert stderr.count("archiving to") == 1, stderr  # logged once
        assert "Permission denied" in stderr, stderr
        assert not list(archive.iterdir())
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _served(base: str) -> int:
    return int(get(f"{base}/api/snapshot")["timestamp"])


def data_bytes(archive_dir: Path) -> int:
    """Bytes of the archive's files but the hidden ones (the lock)."""
    files = [p for p in archive_dir.rglob("*") if p.is_file() and not p.name.startswith(".")]
    return sum(p.stat().st_size for p in files)


def metric(text: str, name: str) -> float | None:
    """The value of the series ``name`` of network main in a /metrics text."""
    for line in text.splitlines():
        if line.startswith(f'{name}{{network="main"}} '):
            return float(line.split()[-1])
    return None


def _failures(base: str) -> float:
    return metric(fetch(f"{base}/metrics")[2].decode(), "crawldash_archive_failures_total") or 0.0


async def test_an_archiving_load_sends_what_any_new_crawls_load_sends(
    tmp_path: Path, data_dir: Path, archive_dir: Path
) -> None:
    """The archive costs a new crawl no freshness: its load sends the crawl ahead as a load
    that does not archive sends it (on two cores, in halves made side by side), replies
    the same, and then archives the crawl."""
    path = write_snapshot(data_dir, END, export_body(rows(40)))
    target = Target(archive_dir, "main", tmp_path / "outcome")
    sent = []
    for instead in (None, archiving_loads({data_dir: target})):
        loader = LoaderClient()
        loader.instead, loader.preload = instead, LOADER_PRELOAD
        loader.start()
        parts: list[object] = []
        try:
            reply = await loader.run(load_new_crawl, path, Rules(10**7), on_part=parts.append)
        finally:
            await loader.close()
        # The halves come in either order: the two processes that make them race.
        sent.append((sorted(map(_kind, parts)), type(reply)))
    assert sent[1] == sent[0]
    if len(os.sched_getaffinity(0)) > 1:  # the map and the breakdowns made beside the rest
        assert "Half of breakdowns, map" in sent[1][0]

    async def archived() -> bool:
        return look(archive_dir, "main").files.keys() == {END}

    await eventually(archived)
    assert rows_per_crawl(archive_dir) == {END: 40}


def _kind(part: object) -> str:
    """What a part sent ahead is: its class, and for a Half the answers it holds."""
    if isinstance(part, Half):
        return "Half of " + ", ".join(sorted(part.fields))
    return type(part).__name__
