"""Every error of every route has the one shape, and no request gets a 500."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from crawldash.app import NETWORKS, create_app
from crawldash.settings.serve import Settings

from .conftest import Client
from .factories import export_body, rows, write_snapshot

EVERY_PATH = [  # every route's path, but the catch-alls, and as the first network serves it
    resource.canonical
    for resource in create_app(Settings(data_dir=Path("unused"))).router.resources()
    if resource.canonical != "/{tail}" and not resource.canonical.startswith("/n/")
]
POST_ONLY = {"/api/v1/checknode/", "/api/v1/checknode"}  # by POST alone (off here: 404 not_served)
ERROR_PATHS = [
    ("GET", "/api/snapshot", 503, "no_snapshot"),
    ("GET", "/api/check?address=203.0.113.5:8333", 503, "no_snapshot"),
    ("GET", "/api/check", 400, "missing_address"),
    ("GET", "/api/check?address=", 400, "missing_address"),
    ("GET", "/api/check?address=host.example:8333", 400, "invalid_address"),
    ("GET", "/api/check?address=1.2.3.4:1&address=1.2.3.4:2", 400, "invalid_address"),
    ("GET", "/api/history?limit=0", 400, "invalid_limit"),
    ("GET", "/api/history?limit=x", 400, "invalid_limit"),
    ("GET", "/readyz", 503, "no_snapshot"),
    ("GET", "/static/nope.js", 404, "not_found"),
    ("GET", "/n/nowhere/api/status", 404, "network_not_found"),
    ("GET", "/n/nowhere", 404, "network_not_found"),
    ("GET", "/n/main/nowhere", 404, "not_found"),
    ("GET", "/n/main/api/history?limit=0", 400, "invalid_limit"),
    ("GET", "/api/history?by=continent", 400, "invalid_by"),
    ("GET", "/api/history?by=network&by=network", 400, "invalid_by"),
    ("GET", "/api/history?by=country&top=0", 400, "invalid_top"),
    ("GET", "/api/history?by=country&top=51", 400, "invalid_top"),
    ("GET", "/api/history?by=country&top=x", 400, "invalid_top"),
    ("GET", "/api/history?by=country&top=1&top=2", 400, "invalid_top"),
    ("GET", "/api/history?by=user_agent&match=", 400, "invalid_match"),
    ("GET", "/api/history?by=user_agent&match=" + "k" * 65, 400, "invalid_match"),
    ("GET", "/api/history?by=user_agent&match=a&match=b", 400, "invalid_match"),
    ("GET", "/api/history?by=country&match=Knots", 400, "invalid_match"),
    ("GET", "/api/history?match=Knots", 400, "invalid_match"),
    ("GET", "/api/history?format=xml", 400, "invalid_format"),
    ("GET", "/api/history?format=", 400, "invalid_format"),
    ("GET", "/api/history?format=csv&format=json", 400, "invalid_format"),
    ("GET", "/api/unique?window=59", 400, "invalid_window"),
    ("GET", "/api/unique?window=31536001", 400, "invalid_window"),
    ("GET", "/api/unique?window=-60", 400, "invalid_window"),
    ("GET", "/api/unique?window=60&window=120", 400, "invalid_window"),
    ("GET", "/api/presence", 400, "missing_address"),
    ("GET", "/api/presence?address=host.example:8333", 400, "invalid_address"),
    ("GET", "/api/presence?address=1.2.3.4:8333&limit=0", 400, "invalid_limit"),
    ("GET", "/api/changes", 503, "no_snapshot"),
    ("GET", "/api/changes?since=yesterday", 400, "invalid_since"),
    ("GET", "/api/changes?since=1&since=2", 400, "invalid_since"),
    ("GET", "/api/v1/snapshots/?limit=101", 400, "invalid_limit"),
    ("GET", "/api/v1/snapshots/?page=0", 400, "invalid_page"),
    ("GET", "/api/v1/snapshots/latest/", 503, "no_snapshot"),
    ("GET", "/api/v1/snapshots/latest/?field=nodes", 400, "invalid_field"),
    ("GET", "/api/v1/snapshots/1700000000/", 404, "snapshot_not_found"),
    ("GET", "/api/v1/snapshots/yesterday/", 404, "snapshot_not_found"),
    ("GET", "/api/v1/nodes/", 503, "no_snapshot"),
    ("GET", "/api/v1/nodes/?country=DEU", 400, "invalid_country"),
    ("GET", "/api/v1/nodes/?limit=1000", 400, "invalid_limit"),
    ("GET", "/api/v1/nodes/203.0.113.5-8333/", 503, "no_snapshot"),
    ("GET", "/api/v1/nodes/203.0.113.5/", 400, "invalid_address"),
    ("GET", "/api/v1/nodes/host.example-8333/", 400, "invalid_address"),
    ("GET", "/api/v1/snapshotz", 404, "not_found"),  # (without its slash: a 308)
    ("GET", "/api/v1/inv/?limit=0", 400, "invalid_limit"),
    ("GET", "/api/v1/inv/?page=x", 400, "invalid_page"),
    ("GET", "/api/v1/inv/00ff/", 400, "invalid_hash"),
    ("GET", "/api/v1/inv/" + "g" * 64 + "/", 400, "invalid_hash"),
    ("GET", "/api/v1/inv/" + "0" * 64 + "/", 404, "inv_not_found"),
    ("GET", "/api/v1/inv/%7B" + "0" * 62 + "%7D/", 400, "invalid_hash"),  # braces: a value too
    ("GET", "/api/v1/nodes/203.0.113.5-8333/latency/", 404, "node_not_found"),
    ("GET", "/api/v1/nodes/host.example-8333/latency/", 400, "invalid_address"),
    ("GET", "/api/v1/nodes/203.0.113.5/latency/", 400, "invalid_address"),
    ("GET", "/api/v1/nodes/%7B203.0.113.5%7D-8333/latency/", 400, "invalid_address"),
    ("GET", "/api/v1/nodes/leaderboard/?page=x", 400, "invalid_page"),
    ("GET", "/api/v1/nodes/leaderboard/?limit=101", 400, "invalid_limit"),
    ("GET", "/api/v1/nodes/leaderboard/?q=a&q=b", 400, "invalid_q"),
    ("GET", "/api/v1/nodes/leaderboard/203.0.113.5/", 400, "invalid_address"),
    ("GET", "/api/v1/nodes/leaderboard/", 503, "no_snapshot"),
    ("GET", "/api/v1/nodes/leaderboard/203.0.113.5-8333/", 503, "no_snapshot"),
    ("GET", "/api/v1/addresses/", 404, "not_served"),
    ("GET", "/api/nothing", 404, "not_found"),
    ("GET", "/api/snapshot/", 404, "not_found"),
    ("DELETE", "/nothing/here", 405, "method_not_allowed"),
    *[
        (method, path, 405, "method_not_allowed")
        for path in EVERY_PATH
        for method in ("POST", "PUT", "PATCH", "DELETE", "OPTIONS")
        if not (path in POST_ONLY and method == "POST")
    ],
    ("POST", "/api/v1/checknode/", 404, "not_served"),
    ("GET", "/api/v1/checknode/", 405, "method_not_allowed"),
]


def assert_error_shape(body: object, status: int, code: str) -> None:
    assert isinstance(body, dict)
    assert list(body) == ["error"]
    error = body["error"]
    assert list(error) == ["status", "code", "message"]
    assert error["status"] == status
    assert error["code"] == code
    assert isinstance(error["message"], str)
    assert len(error["message"]) > 10


@pytest.mark.parametrize(("method", "path", "status", "code"), ERROR_PATHS)
async def test_every_error_has_the_one_shape(client: Client, method, path, status, code):
    response = await client.request(method, path)
    assert response.status == status
    assert response.content_type == "application/json"
    assert_error_shape(await response.json(), status, code)
    if status == 405:
        assert response.headers["Allow"] == ("POST" if path in POST_ONLY else "GET, HEAD")


async def test_refused_encodings_have_the_one_shape(client: Client, data_dir):
    write_snapshot(data_dir, 1_700_000_000, export_body(rows(3)))
    await client.app[NETWORKS][0].refresher.refresh()
    response = await client.get("/api/snapshot", headers={"Accept-Encoding": "identity;q=0"})
    assert response.status == 406
    assert_error_shape(await response.json(), 406, "not_acceptable")


async def test_head_of_an_error_has_no_body(client: Client):
    response = await client.head("/api/snapshot")
    assert response.status == 503
    assert await response.read() == b""


async def test_no_request_gets_a_500(client: Client, data_dir):
    write_snapshot(data_dir, 1_700_000_000, export_body(rows(3)))
    await client.app[NETWORKS][0].refresher.refresh()
    odd = [
        "/api/check?address=%00",
        "/api/check?address=%ff%fe:1",
        "/api/history?limit=%00",
        "/api/check?address=[::1]:8333&x=1",
        "/api/history?limit=1&x",
        "/%2e%2e/etc/passwd",
        "/api/check?address=" + "9" * 5000,
        "/api/history?limit=" + "1" * 5000,
        "/api/presence?address=1.2.3.4:8333&limit=" + "9" * 5000,
        "/api/changes?since=" + "9" * 5000,
        "/api/changes?since=0",
        "/api/unique?window=" + "9" * 5000,
        "/api/history?by=user_agent&match=%00%ff",
        "/api/history?by=asn&top=" + "9" * 5000,
        "/api/nodes?version=" + "9" * 5000,  # past the digits Python reads into an int
        "/api/nodes?limit=" + "9" * 5000,
        "/api/nodes?page=" + "9" * 5000,
        "/api/breakdown?by=country&limit=" + "9" * 5000,
    ]
    for path in odd:
        response = await client.get(path)
        assert response.status < 500, path


async def test_encoded_newlines_and_odd_paths_get_the_one_shape(client: Client):
    """Paths the router only reaches with a catch-all that spans lines."""
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    for target in (b"/api/status%0A", b"/a%0Ab", b"/%0D%0A"):
        writer.write(b"GET " + target + b" HTTP/1.1\r\nHost: c\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(
            next(
                line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
            ).split(b":")[1]
        )
        body = await reader.readexactly(length)
        assert head.startswith(b"HTTP/1.1 404 "), head
        assert b"X-Content-Type-Options: nosniff" in head
        assert_error_shape(json.loads(body), 404, "not_found")
    writer.close()
