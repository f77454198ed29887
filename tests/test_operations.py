"""Metrics, health, readiness and the stale and stuck alarms."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from aiohttp.web_urldispatcher import MatchInfoError
from prometheus_client.parser import text_string_to_metric_families

from crawldash.app import NETWORKS, create_app
from crawldash.ops.access_log import request_logger
from crawldash.ops.metrics import RequestStats

from .conftest import Client, eventually, watching
from .factories import I2P, ONION, export_body, row, rows, write_snapshot, write_status
from .process import serving, wait_until


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def key(name: str, network: str = "main", **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A sample's key: every series is labelled with the network it describes."""
    return name, tuple(sorted({"network": network, **labels}.items()))


async def scrape(client: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await client.get("/metrics")
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=")
    return samples(await response.text())


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian prometheus) missing")
async def test_exposition_passes_promtool(serve, data_dir, now):
    write_snapshot(data_dir, now - 60, export_body(rows(5)))
    write_status(data_dir, updated_at=now)
    client = await serve()
    await client.get("/api/status")
    text = await (await client.get("/metrics")).text()
    command = ["promtool", "check", "metrics"]
    check = await asyncio.to_thread(
        subprocess.run, command, input=text, capture_output=True, text=True, timeout=30
    )
    assert check.returncode == 0, check.stdout + check.stderr


async def test_metrics_move_with_their_causes(serve, data_dir, now):
    write_snapshot(data_dir, now - 1200, export_body(rows(3)))
    write_status(data_dir, state="starting", queue_size=5, last_elapsed=40.5, updated_at=now)
    client = await serve()
    before = await scrape(client)
    assert before[key("crawldash_snapshot_nodes")] == 3
    assert before[key("crawldash_crawler_state", state="starting")] == 1
    assert before[key("crawldash_crawler_queue_size")] == 5
    assert before[key("crawldash_crawler_last_elapsed_seconds")] == 40.5
    assert before[key("crawldash_history_points")] == 1

    write_snapshot(
        data_dir,
        now - 600,
        export_body(
            [*rows(2), row("2001:db8::1"), row("fc00::1"), row(ONION, tor=True), row(I2P, tor=True)]
        ),
    )
    (data_dir / f"{now}.json").write_bytes(b"garbage")
    old = now - 60
    os.utime(data_dir / f"{now}.json", (old, old))
    write_status(data_dir, state="running", queue_size=900, updated_at=now)
    for _ in range(3):
        await client.get("/api/status")
    await client.get("/api/nothing")
    await client.app[NETWORKS][0].refresher.refresh()
    await watching(client)
    after = await scrape(client)
    assert after[key("crawldash_snapshot_timestamp_seconds")] == now - 600
    assert after[key("crawldash_snapshot_nodes")] == 6
    for network, count in [("ipv4", 2), ("ipv6", 1), ("cjdns", 1), ("onion", 1), ("i2p", 1)]:
        assert after[key("crawldash_snapshot_nodes_by_address_type", address_type=network)] == count
    assert after[key("crawldash_crawler_state", state="running")] == 1
    assert after[key("crawldash_crawler_queue_size")] == 900
    assert after[key("crawldash_history_points")] == 2
    assert after[key("crawldash_files_rejected_total", kind="not_json")] == 1
    status_200 = key("crawldash_http_requests_total", route="/api/status", status="200")
    assert after[status_200] >= 3
    assert after[key("crawldash_http_requests_total", "", route="other", status="404")] == 1
    assert after[key("crawldash_http_request_duration_seconds_count", route="/api/status")] >= 3
    refreshes = key("crawldash_refresh_duration_seconds_count")
    assert after[refreshes] > before[refreshes]
    assert after[key("crawldash_watcher_up")] == 1
    assert after[key("crawldash_watcher_watching")] == 1


async def test_watcher_down_shows_in_health_and_metrics(aiohttp_client, settings):
    def broken(*_args: object, **_kwargs: object) -> object:
        raise OSError(24, "Too many open files")

    app = create_app(settings)
    app[NETWORKS][0].watcher.awatch = broken  # type: ignore[assignment]
    client = await aiohttp_client(app)

    async def restarted() -> bool:
        return (await scrape(client))[key("crawldash_watcher_restarts_total")] >= 1

    await eventually(restarted)
    response = await client.get("/healthz")
    assert response.status == 503
    assert (await response.json())["error"]["code"] == "watcher_down"
    assert (await scrape(client))[key("crawldash_watcher_up")] == 0
    assert (await scrape(client))[key("crawldash_watcher_watching")] == 0


async def test_healthz_and_readyz(serve, data_dir, now):
    client = await serve()

    async def alive() -> bool:
        return bool((await client.get("/healthz")).status == 200)

    await eventually(alive)
    assert (await (await client.get("/healthz")).json()) == {"status": "ok"}
    response = await client.get("/readyz")
    assert response.status == 503
    assert (await response.json())["error"]["code"] == "no_snapshot"

    write_snapshot(data_dir, now - 60, export_body(rows(3)))
    write_status(data_dir, updated_at=now)
    await client.app[NETWORKS][0].refresher.refresh()
    assert (await client.get("/readyz")).status == 200

    write_status(data_dir, state="starting", updated_at=now - 7200)
    await client.app[NETWORKS][0].refresher.refresh()
    response = await client.get("/readyz")
    assert response.status == 503
    assert (await response.json())["error"]["code"] == "crawler_stuck"
    status = await (await client.get("/api/status")).json()
    assert status["stuck"] is True


async def test_stale_threshold_derives_from_the_crawl_interval(serve, data_dir, now):
    for i in range(4):  # crawls every 20 minutes: stale after 3 x 1200 s
        write_snapshot(data_dir, now - 3000 - 1200 * (3 - i), export_body(rows(3)))
    client = await serve()
    status = await (await client.get("/api/status")).json()
    assert status["stale"] is False  # 3000 s old, under 3600
    assert status["next_crawl_expected"] == now - 3000 + 1200
    assert (await scrape(client))[key("crawldash_stale_after_seconds")] == 3600


async def test_explicit_stale_after_wins_and_stale_shows_in_readyz(serve, data_dir, now):
    write_snapshot(data_dir, now - 120, export_body(rows(3)))
    client = await serve(stale_after=60)
    assert (await (await client.get("/api/status")).json())["stale"] is True
    response = await client.get("/readyz")
    assert (await response.json())["error"]["code"] == "stale"
    assert (await scrape(client))[key("crawldash_stale")] == 1


def logged(err: str) -> list[str]:
    """The access-log lines in ``err``, but for the test's own scrapes of /metrics."""
    return [
        line for line in err.splitlines() if "aiohttp.access" in line and "/metrics" not in line
    ]


@pytest.mark.parametrize("access_log", [True, False])
async def test_requests_are_counted_whether_or_not_the_access_log_is_written(
    serve, data_dir: Path, capsys, access_log: bool, now
):
    write_snapshot(data_dir, now - 60, export_body(rows(3)))
    client = await serve(access_log=access_log)
    sizes = []
    for path in ("/api/check?address=203.0.113.9:8333", "/api/check", "/no/such/page%0Ax"):
        response = await client.get(path, headers={"User-Agent": 'probe "1"'})
        sizes.append(len(await response.read()))
    written = capsys.readouterr().err
    assert "aiohttp.access" not in written  # written in batches

    async def all_counted() -> bool:
        scraped = await scrape(client)
        return (
            scraped.get(key("crawldash_http_requests_total", "", route="other", status="404"), 0)
            == 1
        )

    async def all_written() -> bool:
        nonlocal written
        written += capsys.readouterr().err
        return len(logged(written)) >= 3

    await eventually(all_counted)  # the hook has seen every request
    if access_log:
        await eventually(all_written)
    lines = logged(written + capsys.readouterr().err)
    assert len(lines) == (3 if access_log else 0)
    if access_log:
        request_line = ' INFO aiohttp.access: 127.0.0.1 "GET /api/check HTTP/1.1" 400 '
        assert request_line in lines[1]
        sent = int(lines[1].split(request_line)[1].split()[0])
        assert sizes[1] < sent < sizes[1] + 400  # bytes sent, headers included, as aiohttp logs
        assert '"GET /no/such/page%0Ax HTTP/1.1" 404' in lines[2]  # as sent: one line
        assert '"probe \\"1\\""' in lines[0]
        assert lines[0].endswith("ms")
    after = await scrape(client)
    check = "/api/check"
    assert after[key("crawldash_http_requests_total", route=check, status="200")] == 1
    assert after[key("crawldash_http_requests_total", route=check, status="400")] == 1
    assert after[key("crawldash_http_requests_total", "", route="other", status="404")] == 1
    histogram = after[key("crawldash_http_request_duration_seconds_count", route=check)]
    assert histogram == 2
    inf = after[key("crawldash_http_request_duration_seconds_bucket", le="+Inf", route=check)]
    assert inf == 2


async def test_a_scrape_counts_every_request_however_many_batches_they_made(serve, data_dir, now):
    """Requests are noted one by one and counted in batches of FOLD_AT: a scrape counts the
    batches folded and the requests noted since, each once."""
    write_snapshot(data_dir, now - 60, export_body(rows(3)))
    client = await serve()
    asked = 2 * RequestStats.FOLD_AT + 44
    for _ in range(asked):
        assert (await client.get("/api/status")).status == 200
    for _ in range(2):  # the second scrape also counts the first, and nothing twice
        after = await scrape(client)
        assert after[key("crawldash_http_requests_total", route="/api/status", status="200")] == (
            asked
        )
        assert after[key("crawldash_http_request_duration_seconds_count", route="/api/status")] == (
            asked
        )
    assert after[key("crawldash_http_requests_total", route="/metrics", status="200")] == 1


def test_requests_noted_are_folded_once_a_batch_is_full():
    stats = RequestStats()
    logger = request_logger(stats, None)(logging.getLogger("aiohttp.access"), "")
    # aiohttp's test request comes matched to a route of its own, none of crawldash's: other
    request, response = make_mocked_request("GET", "/"), web.Response(status=400)
    for _ in range(3 * RequestStats.FOLD_AT):
        logger.log(request, response, 0.0003)
        assert len(stats.answered) < RequestStats.FOLD_AT  # memory is bounded between scrapes
    cell = stats.cells["other", 400]
    assert sum(cell[:-1]) == 3 * RequestStats.FOLD_AT
    assert cell[2] == 3 * RequestStats.FOLD_AT  # 0.3 ms: the (0.25 ms, 0.5 ms] bucket


def test_requests_aiohttp_answers_itself_are_counted_in_one_cell():
    """``OPTIONS *`` matches no route: aiohttp answers 404 with a route of its own, made anew
    for each such request. However many come, they are counted together, in bounded memory."""
    stats = RequestStats()
    for _ in range(RequestStats.FOLD_AT + 1):
        stats.answered.append((MatchInfoError(web.HTTPNotFound()), 404, 0.0003))
    stats.fold()
    assert sum(stats.cells["other", 404][:-1]) == RequestStats.FOLD_AT + 1
    assert len(stats._cell_of) == 1


def test_a_request_refused_before_routing_is_counted_and_logs_no_traceback(
    data_dir: Path, tmp_path: Path, now
):
    write_snapshot(data_dir, now - 60, export_body(rows(3)))
    with serving(data_dir, tmp_path / "state") as base:  # which fails on a traceback
        port = int(base.rpartition(":")[2])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(b"GET /api/status HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n")
            assert connection.recv(64).startswith(b"HTTP/1.0 400 ")
        refused = key("crawldash_http_requests_total", "", route="other", status="400")

        def counted() -> bool:
            with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
                return samples(response.read().decode()).get(refused) == 1

        wait_until(counted)
