"""The watcher keeps what is served fresh, and bad files never replace good data."""

from __future__ import annotations

import asyncio
import logging
import os
import platform
import signal
import subprocess
import time
from pathlib import Path

import pytest

from crawldash.app import LOADER, NETWORKS
from crawldash.crawl.count import read_count
from crawldash.crawl.decode import Rules
from crawldash.crawl.files import LoadError
from crawldash.live.loader.client import LOADER_NICENESS, LoaderClient
from crawldash.live.loader.priority import SLICE_NS
from crawldash.live.loader.replies import LARGE, packed, unpacked
from crawldash.live.refreshing import rejections

from .conftest import Client, eventually, served_timestamp, until_served, watching
from .factories import export_body, rows, write_snapshot, write_status
from .loader_jobs import SCHED_GETATTR, die_the_first_time, large_and_small, scheduling
from .process import as_nobody

TS = 1_700_000_000


async def served_nodes(client: Client) -> int:
    return int((await (await client.get("/api/snapshot")).json())["total_nodes"])


def age(path: Path, seconds: float) -> None:
    """Make a file look as if it was last written ``seconds`` ago."""
    then = time.time() - seconds
    os.utime(path, (then, then))


async def test_new_snapshot_is_served_within_a_second(serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(5)))
    client = await serve()
    assert await served_timestamp(client) == TS
    await watching(client)
    write_snapshot(data_dir, TS + 600, export_body(rows(7)))
    await until_served(client, TS + 600)  # and its history point taken in
    assert await served_nodes(client) == 7
    history = await (await client.get("/api/history")).json()
    assert [p["reachable"] for p in history] == [5, 7]


async def test_half_written_file_is_never_served(serve, data_dir, caplog, monkeypatch):
    # The half stays fresh however slow the machine: a file unchanged for SETTLE_SECONDS
    # counts as written, and its rejection is logged (as test_isolation.py's are).
    monkeypatch.setattr(rejections, "SETTLE_SECONDS", 3600.0)
    write_snapshot(data_dir, TS, export_body(rows(5)))
    client = await serve()
    refresher = client.app[NETWORKS][0].refresher
    await watching(client)
    body = export_body(rows(400))
    path = data_dir / f"{TS + 600}.json"
    with path.open("wb") as handle:  # written in place, as bitnodes' exporter does
        handle.write(body[: len(body) // 2])
        handle.flush()

        async def seen_torn() -> bool:
            return path.name in refresher.rejected

        await eventually(seen_torn)
        assert await served_timestamp(client) == TS
        assert await served_nodes(client) == 5
        handle.write(body[len(body) // 2 :])

    async def served() -> bool:
        return await served_timestamp(client) == TS + 600

    await eventually(served)
    assert await served_nodes(client) == 400
    assert path.name not in refresher.rejected
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty"),
        (b"   \n", "empty"),
        (b"\x00\x01garbage", "not JSON"),
        (b'{"nodes": 5}', "does not decode"),
        (b'[["203.0.113.5", 8333]]', "does not decode"),
        (b'[["203.0.113.5", 8333, 70016', "does not decode"),
        (b'{"timestamp": 1}', "does not decode"),
        (
            b'[["not an address", 8333, 70016, null, 0, 0, 0, null, null, null, 0, 0, null, null,'
            b" null]]",
            "none of its 1 rows is usable",
        ),
    ],
)
async def test_bad_files_are_rejected_and_logged_once(serve, data_dir, caplog, content, reason):
    write_snapshot(data_dir, TS, export_body(rows(5)))
    bad = data_dir / f"{TS + 600}.json"
    bad.write_bytes(content)
    age(bad, 60)
    client = await serve()
    refresher = client.app[NETWORKS][0].refresher
    for _ in range(3):
        await refresher.refresh()
    assert await served_timestamp(client) == TS
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert bad.name in warnings[0]
    assert reason in warnings[0]
    history = await (await client.get("/api/history")).json()
    assert [p["timestamp"] for p in history] == [TS]

    write_snapshot(data_dir, TS + 600, export_body(rows(9)))  # fixed: tried again, served

    async def served() -> bool:
        return await served_timestamp(client) == TS + 600

    await eventually(served)  # the watcher was watching: the refreshes above waited for it


async def test_too_large_file_is_rejected(serve, data_dir, caplog):
    write_snapshot(data_dir, TS, export_body(rows(5)))
    write_snapshot(data_dir, TS + 600, export_body(rows(500)))
    age(data_dir / f"{TS + 600}.json", 60)
    client = await serve(max_file_size=10_000)
    assert await served_timestamp(client) == TS
    assert any("over the limit of 10000 bytes" in r.getMessage() for r in caplog.records)


async def test_deleting_files_never_empties_memory(serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(3)))
    write_snapshot(data_dir, TS + 600, export_body(rows(4)))
    write_status(data_dir, state="running")
    client = await serve()
    for path in data_dir.iterdir():
        path.unlink()
    await watching(client)
    await client.app[NETWORKS][0].refresher.refresh()
    assert await served_timestamp(client) == TS + 600
    assert (await (await client.get("/api/status")).json())["state"] == "running"
    history = await (await client.get("/api/history")).json()
    assert [p["reachable"] for p in history] == [3, 4]
    write_snapshot(data_dir, TS + 1200, export_body(rows(6)))

    async def served() -> bool:
        return await served_timestamp(client) == TS + 1200

    await eventually(served)


async def test_status_json_changes_are_picked_up_and_bad_ones_ignored(serve, data_dir):
    write_status(data_dir, state="starting", queue_size=1)
    client = await serve()

    async def state_is(expected: str) -> bool:
        return bool((await (await client.get("/api/status")).json())["state"] == expected)

    assert await state_is("starting")
    await watching(client)
    write_status(data_dir, state="running", queue_size=5000)
    await eventually(lambda: state_is("running"))
    (data_dir / "status.json").write_text('{"state": 5}')
    await client.app[NETWORKS][0].refresher.refresh()
    assert await state_is("running")


async def test_a_status_file_kept_elsewhere_is_read_there_and_followed(
    serve, data_dir, tmp_path, caplog
):
    elsewhere = tmp_path / "run"
    elsewhere.mkdir()
    write_snapshot(data_dir, TS, export_body(rows(3)))
    write_status(data_dir, state="in the data folder")  # not read: --status-file wins
    status_file = write_status(elsewhere, state="starting", queue_size=1)
    client = await serve(status_file=(("main", status_file),))

    async def state_is(expected: str) -> bool:
        return bool((await (await client.get("/api/status")).json())["state"] == expected)

    assert await state_is("starting")
    await watching(client)
    write_status(elsewhere, state="running", queue_size=5000)  # no crawl changes meanwhile
    await eventually(lambda: state_is("running"))
    status_file.write_text('{"state": 5}')
    age(status_file, 60)
    await client.app[NETWORKS][0].refresher.poll_status()
    assert await state_is("running")  # a bad one is that file's problem
    assert "name=status.json kind=decode" in caplog.text
    status_file.unlink()
    await client.app[NETWORKS][0].refresher.refresh()
    assert await state_is("running")  # gone: the last good status stays


async def test_newest_unusable_at_start_serves_the_newest_good_file(serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(3)))
    write_snapshot(data_dir, TS + 600, export_body(rows(4)))
    (data_dir / f"{TS + 1200}.json").write_bytes(b"[[")
    client = await serve()
    assert await served_timestamp(client) == TS + 600


async def test_other_files_are_ignored(serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(3)))
    (data_dir / f"{TS + 600}.json.tmp").write_bytes(export_body(rows(9)))
    (data_dir / "notes.json").write_bytes(b"[]")
    (data_dir / "9999999999.txt").write_bytes(b"[]")
    client = await serve()
    assert await served_timestamp(client) == TS
    history = await (await client.get("/api/history")).json()
    assert [p["timestamp"] for p in history] == [TS]


async def test_new_snapshots_load_in_another_process_which_is_replaced_if_it_dies(
    serve, data_dir, caplog
):
    write_snapshot(data_dir, TS, export_body(rows(5)))
    client = await serve()
    loader = client.app[LOADER]
    used = await loader.run(os.getpid)  # a child the loader process forked for the call
    victim = loader.pid
    assert victim is not None
    assert used not in (victim, os.getpid())
    os.kill(victim, signal.SIGKILL)
    write_snapshot(data_dir, TS + 600, export_body(rows(7)))
    await client.app[NETWORKS][0].refresher.refresh()
    assert await served_timestamp(client) == TS + 600
    assert any("snapshot loader process died" in r.getMessage() for r in caplog.records)
    assert loader.pid not in (None, victim)
    new_pid = await loader.run(os.getpid)
    assert new_pid not in (victim, used, os.getpid())
    write_snapshot(data_dir, TS + 1200, export_body(rows(9)))
    await client.app[NETWORKS][0].refresher.refresh()
    assert await served_nodes(client) == 9


async def test_a_load_that_kills_the_loader_is_retried_in_a_new_loader_process(tmp_path, caplog):
    loader = LoaderClient()
    loader.start()
    try:
        marker = tmp_path / "died-once"
        pid = await loader.run(die_the_first_time, str(marker))
        assert marker.exists()  # the first attempt ran, and its process was killed
        assert pid != os.getpid()  # the retry ran in a process, not in the server's threads
        assert loader.deaths == 1
        assert any("trying the load again" in r.getMessage() for r in caplog.records)
    finally:
        await loader.close()


async def test_a_load_that_kills_every_loader_is_a_load_error(tmp_path):
    loader = LoaderClient()
    loader.start()
    try:
        with pytest.raises(LoadError) as error:
            await loader.run(os.abort)
        assert error.value.kind == "loader_died"
        assert await loader.run(os.getpid) != os.getpid()  # and a third one serves on
    finally:
        await loader.close()


async def test_the_loader_process_yields_to_the_server_and_never_preempts(serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(5)))
    client = await serve()
    loader = client.app[LOADER]
    # Within the server's session the least share of a busy core; against other sessions
    # (the crawler's service) the session's share is what counts.
    assert await loader.run(os.nice, 0) == min(19, os.nice(0) + LOADER_NICENESS)
    assert await loader.run(os.sched_getscheduler, 0) == os.SCHED_BATCH  # never preempts
    first, second = [await loader.run(os.getpid) for _ in "12"]
    assert first != second  # a fresh process for every load: its memory is given back
    assert loader.pid not in (None, first, second)  # forked by the one loader process,
    children = Path(f"/proc/{loader.pid}/task/{loader.pid}/children")

    async def none_kept() -> bool:  # waited for: one was still listed once, under load
        return await asyncio.to_thread(children.read_text) == ""

    await eventually(none_kept)


needs_custom_slices = pytest.mark.skipif(
    tuple(int(part) for part in platform.release().split(".")[:2]) < (6, 12),
    reason="Linux grants a process a scheduler slice of its choice from 6.12",
)
needs_sched_getattr = pytest.mark.skipif(
    platform.machine() not in SCHED_GETATTR,
    reason=f"sched_getattr's number on {platform.machine()} is not known here",
)


@needs_custom_slices
@needs_sched_getattr
async def test_a_load_holds_a_shared_core_a_tenth_of_a_millisecond_at_a_time(serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(5)))
    client = await serve()
    policy, _, slice_ns = await client.app[LOADER].run(scheduling)
    assert policy == os.SCHED_BATCH
    assert slice_ns == SLICE_NS == 100_000  # the default is some milliseconds


@needs_custom_slices
@needs_sched_getattr
def test_any_user_gets_the_batch_policy_and_short_slices_and_keeps_the_niceness():
    arguments = as_nobody()
    script = (
        "import os; from crawldash.live.loader.priority import batch_policy, short_slices; "
        "from tests.loader_jobs import scheduling; os.nice(7); "
        "print(short_slices(250_000), batch_policy(), *scheduling())"
    )
    done = subprocess.run(
        [*arguments["prefix"], arguments["python"], "-c", script],
        env={**os.environ, **arguments["env"]},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["True", "True", str(os.SCHED_BATCH), "7", "250000"]


async def test_what_a_load_raises_is_raised_in_the_server_which_loads_on(tmp_path):
    loader = LoaderClient()
    loader.start()
    try:
        with pytest.raises(ValueError, match="invalid literal"):
            await loader.run(int, "not a number")
        (tmp_path / "123.json").mkdir()
        with pytest.raises(LoadError) as error:
            await loader.run(read_count, tmp_path / "123.json", Rules(1000, False))
        assert error.value.kind == "not_a_file"
        assert loader.deaths == 0
        assert await loader.run(int, "7") == 7
    finally:
        await loader.close()


async def test_large_bytes_cross_beside_the_reply_and_come_back_whole():
    """Bodies of a large crawl are read beside the pickle, each once, as they were."""
    loader = LoaderClient()
    loader.start()
    try:
        got = await loader.run(large_and_small, 4 * LARGE)
        assert got == large_and_small(4 * LARGE)
        assert got["again"] is got["large"]  # referred to twice: read once
    finally:
        await loader.close()


def test_a_reply_cut_short_is_refused_not_misread():
    reply = ("ok", large_and_small(2 * LARGE))
    parts = packed(reply)
    assert len(parts) == 4  # length, pickle, and the two large objects beside it
    whole = b"".join(parts)
    for size in (len(whole), len(whole) - 1, len(parts[0]) + len(parts[1]), 3):
        fd = os.memfd_create("reply")
        os.write(fd, whole[:size])
        if size == len(whole):
            assert unpacked(fd, size) == reply
        else:
            with pytest.raises(EOFError):
                unpacked(fd, size)
