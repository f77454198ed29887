"""The four endpoints over a real socket, against real files."""

from __future__ import annotations

import logging
import pickle
import time

import msgspec

from crawldash.crawl.decode import decode_snapshot
from crawldash.crawl.files import FileVersion, LoadError
from crawldash.live.answers.checks import CheckAnswers
from crawldash.live.answers.reasons import Evidence, reason_for
from crawldash.live.snapshot.prepared import PreparedSnapshot
from crawldash.live.stores.presence import Presence
from crawldash.models import CheckBody, PresenceBody

from .conftest import Client, eventually
from .factories import I2P, ONION, api_body, export_body, row, rows, write_snapshot, write_status

TS = 1_700_000_000


async def test_snapshot_export_form_is_served_in_api_v1_shape(serve, data_dir):
    body = [
        row("203.0.113.5", height=900_001),
        row("2001:DB8:0:0::1", 18333, height=900_001),
        row(ONION, tor=True),
        row(I2P, 0 + 8333, tor=True),
        row("198.51.100.7", height=900_001),
    ]
    write_snapshot(data_dir, TS, export_body(body))
    client = await serve()
    response = await client.get("/api/snapshot")
    assert response.status == 200
    assert response.content_type == "application/json"
    snapshot = await response.json()
    assert snapshot["timestamp"] == TS
    assert snapshot["total_nodes"] == 5
    assert snapshot["latest_height"] == 900_001
    assert set(snapshot["nodes"]) == {
        "203.0.113.5:8333",
        "[2001:db8::1]:18333",
        f"{ONION}:8333",
        f"{I2P}:8333",
        "198.51.100.7:8333",
    }
    assert snapshot["nodes"]["203.0.113.5:8333"] == row("203.0.113.5", height=900_001)[2:]


async def test_rows_with_unusable_addresses_are_skipped_and_counted_in_the_log(
    serve, data_dir, caplog
):
    caplog.set_level(logging.INFO, "crawldash")
    body = [row("203.0.113.5"), row("node.example.com"), row("198.51.100.7", 0), row("::1")]
    write_snapshot(data_dir, TS, export_body(body))
    client = await serve()
    snapshot = await (await client.get("/api/snapshot")).json()
    assert list(snapshot["nodes"]) == ["203.0.113.5:8333", "[::1]:8333"]
    loaded = [r.getMessage() for r in caplog.records if "snapshot loaded" in r.getMessage()]
    assert loaded, "no snapshot loaded line"
    assert "nodes=2 skipped_rows=2 " in loaded[0]


async def test_snapshot_api_form_and_duplicates_keep_the_later_row(serve, data_dir):
    nodes = {"[2001:db8::1]:8333": row("x", height=1)[2:], "198.51.100.7:8333": row("x")[2:]}
    write_snapshot(data_dir, TS, api_body(TS, nodes))
    write_snapshot(
        data_dir,
        TS + 600,
        export_body(
            [row("203.0.113.5", height=5), row("203.0.113.5", height=6), row("198.51.100.7")]
        ),
    )
    client = await serve()
    snapshot = await (await client.get("/api/snapshot")).json()
    assert snapshot["timestamp"] == TS + 600
    assert snapshot["total_nodes"] == 2
    assert snapshot["nodes"]["203.0.113.5:8333"][4] == 6
    history = await (await client.get("/api/history")).json()
    assert history == [{"timestamp": TS, "reachable": 2}, {"timestamp": TS + 600, "reachable": 2}]


async def test_empty_folder_answers_503_and_unknown_status(client: Client):
    async def counted() -> bool:
        return bool((await (await client.get("/api/status")).json())["history_complete"])

    await eventually(counted)  # the background count of an empty folder ends at once
    response = await client.get("/api/snapshot")
    assert response.status == 503
    assert (await response.json())["error"]["code"] == "no_snapshot"
    response = await client.get("/api/check", params={"address": "203.0.113.5:8333"})
    assert response.status == 503
    assert await (await client.get("/api/history")).json() == []
    status = await (await client.get("/api/status")).json()
    assert status == {
        "state": "unknown",
        "queue_size": None,
        "reached": None,
        "last_crawl_at": None,
        "height": None,
        "last_elapsed": None,
        "updated_at": None,
        "snapshot_timestamp": None,
        "snapshot_age": None,
        "stale": True,
        "stuck": False,
        "stuck_reason": None,
        "updated_at_ahead": False,
        "history_complete": True,
        "degraded": None,
        "next_crawl_expected": None,
    }


async def test_status_from_status_json(serve, data_dir):
    now = int(time.time())
    write_snapshot(data_dir, now - 120, export_body(rows(3)))
    write_status(
        data_dir,
        state="crawling",
        queue_size=7,
        height=912_345,
        last_elapsed=33.5,
        updated_at=now - 5,
        unknown_key="ignored",
    )
    client = await serve()
    status = await (await client.get("/api/status")).json()
    assert status["state"] == "crawling"
    assert status["queue_size"] == 7
    assert status["height"] == 912_345
    assert status["last_elapsed"] == 33.5
    assert status["updated_at"] == now - 5
    assert status["snapshot_timestamp"] == now - 120
    assert 120 <= status["snapshot_age"] <= 125
    assert status["stale"] is False


async def test_status_without_status_json_falls_back_to_snapshot_height(serve, data_dir):
    write_snapshot(data_dir, int(time.time()) - 7200, export_body(rows(4, height=800_123)))
    client = await serve(stale_after=3600)
    status = await (await client.get("/api/status")).json()
    assert status["state"] == "unknown"
    assert status["queue_size"] is None
    assert status["last_elapsed"] is None
    assert status["height"] == 800_123
    assert status["stale"] is True


async def test_history_limit_order_and_bounds(serve, data_dir):
    for i in range(6):
        write_snapshot(data_dir, TS + 600 * i, export_body(rows(10 + i)))
    client = await serve(history_size=5)
    everything = await (await client.get("/api/history", params={"limit": "1000000"})).json()
    assert everything == [{"timestamp": TS + 600 * i, "reachable": 10 + i} for i in range(1, 6)]
    latest_two = await (await client.get("/api/history?limit=2")).json()
    assert latest_two == everything[-2:]
    assert await (await client.get("/api/history?limit=" + "9" * 40)).json() == everything
    for bad in ("0", "-1", "abc", "1.5", "", " 3", "२"):
        response = await client.get("/api/history", params={"limit": bad})
        assert response.status == 400, bad
        error = (await response.json())["error"]
        assert error["code"] == "invalid_limit"
        assert "at least 1" in error["message"]
    response = await client.get("/api/history?limit=1&limit=2")
    assert response.status == 400


async def test_check_finds_nodes_by_any_spelling(serve, data_dir):
    write_snapshot(
        data_dir,
        TS,
        export_body(
            [row("2001:db8::1"), row(ONION, tor=True), row(I2P, tor=True), row("203.0.113.5")]
        ),
    )
    client = await serve()
    for spelled, canonical in [
        ("[2001:DB8:0:0::1]:8333", "[2001:db8::1]:8333"),
        ("[2001:0db8:0000::0001]:8333", "[2001:db8::1]:8333"),
        (ONION.upper() + ":8333", f"{ONION}:8333"),
        (I2P + ":8333", f"{I2P}:8333"),
        ("203.0.113.5:8333", "203.0.113.5:8333"),
    ]:
        answer = await (await client.get("/api/check", params={"address": spelled})).json()
        assert answer["address"] == canonical
        assert answer["reachable"] is True
        assert answer["snapshot_timestamp"] == TS
    answer = await (await client.get("/api/check", params={"address": "203.0.113.5:8333"})).json()
    assert answer["node"]["user_agent"] == "/Satoshi:27.0.0/"
    assert answer["node"]["asn"] == "AS12389"
    assert len(answer["node"]) == 13
    missing = await (await client.get("/api/check", params={"address": "203.0.113.6:8333"})).json()
    assert missing == {
        "address": "203.0.113.6:8333",
        "reachable": False,
        "snapshot_timestamp": TS,
        "node": None,
        "presence": {"crawls": 1, "seen": 0, "first_seen": None, "last_seen": None},
        "reason": {"code": "unknown", "detail": missing["reason"]["detail"], "crawl": None},
        "last_up": None,
    }
    assert "no crawl folder" in missing["reason"]["detail"]


async def test_check_rejects_malformed_addresses(client: Client):
    response = await client.get("/api/check")
    assert response.status == 400
    assert (await response.json())["error"]["code"] == "missing_address"
    for bad in (
        "example.com:8333",
        "2001:db8::1:8333",
        "203.0.113.5",
        "203.0.113.5:0",
        "203.0.113.5:65536",
        "203.0.113.5:80a",
        "[203.0.113.5]:8333",
        "1.2.3:8333",
        "abc.onion:8333",
        "[fe80::1%eth0]:8333",
        "1" * 200 + ":8333",
        ":8333",
    ):
        response = await client.get("/api/check", params={"address": bad})
        assert response.status == 400, bad
        error = (await response.json())["error"]
        assert error["code"] == "invalid_address", bad
        assert error["message"]


async def test_head_has_get_headers_and_no_body(serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(50)))
    client = await serve()
    get = await client.get("/api/snapshot")
    head = await client.head("/api/snapshot")
    assert head.status == 200
    assert head.headers["Content-Type"] == get.headers["Content-Type"]
    assert head.headers["Content-Length"] == get.headers["Content-Length"]
    assert await head.read() == b""


def test_check_answers_have_the_published_shape_and_cross_processes():
    """The check answer is spliced from pre-encoded nodes: it must equal encoding the
    published CheckBody, also after the snapshot is pickled back from the loader process."""
    snapshot = decode_snapshot(
        export_body([*rows(3), row("2001:db8::7"), row(ONION, tor=True)]), TS
    )
    served = pickle.loads(
        pickle.dumps(PreparedSnapshot.prepare(snapshot, FileVersion(1, TS * 10**9)))
    )
    presence = Presence()
    presence.add(TS - 600, list(snapshot.nodes)[:2])
    presence.add(TS, list(snapshot.nodes))
    answers = CheckAnswers(presence)
    for n, (address, node) in enumerate(snapshot.nodes.items()):
        seen = PresenceBody(2, 2, TS - 600, TS) if n < 2 else PresenceBody(2, 1, TS, TS)
        up = reason_for(address, TS, Evidence())
        expected = msgspec.json.encode(CheckBody(address, True, TS, node.named(), seen, up, TS))
        assert answers.check(served, address) == expected
        assert answers.check(served, address) == expected  # the cached answer, too
    missing = "203.0.113.254:8333"
    never = PresenceBody(2, 0, None, None)
    unknown = reason_for(missing, None, Evidence())
    assert answers.check(served, missing) == msgspec.json.encode(
        CheckBody(missing, False, TS, None, never, unknown, None)
    )


def test_load_errors_cross_processes_intact():
    error = pickle.loads(pickle.dumps(LoadError("not_json", "not JSON: expected an array")))
    assert (error.kind, str(error)) == ("not_json", "not JSON: expected an array")
