"""Conditional requests, compression, cache headers, CORS and the published schema."""

from __future__ import annotations

import gzip
import time
from email.utils import formatdate
from pathlib import Path

import brotli
import msgspec
import pytest

from crawldash.app import NETWORKS, create_app
from crawldash.settings.serve import Settings
from crawldash.web.responses import negotiate

from .conftest import Client, until_served, watching
from .factories import export_body, rows, write_snapshot
from .test_error_contract import EVERY_PATH

TS = 1_700_000_000


@pytest.fixture
async def served(serve, data_dir) -> Client:
    for i in range(3):
        write_snapshot(data_dir, TS + 600 * i, export_body(rows(300 + i)))
    client: Client = await serve()
    return client


@pytest.mark.parametrize("path", ["/api/snapshot", "/api/status", "/api/history?limit=2"])
async def test_etag_revalidation_answers_304_without_body(served: Client, path: str):
    first = await served.get(path)
    assert first.status == 200
    etag = first.headers["ETag"]
    assert etag.startswith('"')
    assert "Last-Modified" in first.headers
    again = await served.get(path, headers={"If-None-Match": etag})
    if path == "/api/status" and again.status == 200:  # the age ticked over a second
        again = await served.get(path, headers={"If-None-Match": again.headers["ETag"]})
    assert again.status == 304
    assert await again.read() == b""
    assert again.headers["ETag"]
    stale = await served.get(path, headers={"If-None-Match": '"not-it", W/"nor-this"'})
    assert stale.status == 200
    assert await stale.read() == await first.read() or path == "/api/status"


@pytest.mark.parametrize("path", ["/api/snapshot", "/api/history?limit=144"])
async def test_any_codings_etag_revalidates_the_others(served: Client, path: str):
    """A cache that holds the gzip copy may revalidate asking for br, and so on."""
    tags = {}
    for coding in ("identity", "gzip", "br"):
        response = await served.get(path, headers={"Accept-Encoding": coding})
        assert response.headers.get("Content-Encoding", "identity") == coding
        tags[coding] = response.headers["ETag"]
    assert len(set(tags.values())) == 3  # each coding has its own tag
    for held in tags.values():
        for asked in ("identity", "gzip", "br"):
            headers = {"If-None-Match": held, "Accept-Encoding": asked}
            again = await served.get(path, headers=headers)
            assert again.status == 304, (held, asked)
            assert again.headers["ETag"] == tags[asked]


async def test_if_modified_since(served: Client):
    first = await served.get("/api/snapshot")
    modified = first.headers["Last-Modified"]
    assert (
        await served.get("/api/snapshot", headers={"If-Modified-Since": modified})
    ).status == 304
    earlier = formatdate(time.time() - 10 * 86400, usegmt=True)
    assert (await served.get("/api/snapshot", headers={"If-Modified-Since": earlier})).status == 200
    assert (
        await served.get("/api/snapshot", headers={"If-Modified-Since": "nonsense"})
    ).status == 200


async def test_new_snapshot_changes_the_validator(served: Client, data_dir: Path):
    etag = (await served.get("/api/snapshot")).headers["ETag"]
    write_snapshot(data_dir, TS + 1800, export_body(rows(400)))
    await served.app[NETWORKS][0].refresher.refresh()
    response = await served.get("/api/snapshot", headers={"If-None-Match": etag})
    assert response.status == 200
    assert (await response.json())["total_nodes"] == 400


@pytest.mark.parametrize(
    ("accept", "coding"),
    [
        ("gzip", "gzip"),
        ("br", "br"),
        ("gzip, deflate, br", "br"),
        ("br;q=0.5, gzip", "gzip"),
        ("identity", None),
        ("", None),
        ("*", "br"),
        ("zstd", None),
    ],
)
@pytest.mark.parametrize("path", ["/api/snapshot", "/api/history?limit=3"])
async def test_compression_is_negotiated(served: Client, path: str, accept: str, coding):
    plain = await served.get(path, headers={"Accept-Encoding": "identity"})
    identity = await plain.read()
    response = await served.get(path, headers={"Accept-Encoding": accept}, auto_decompress=False)
    assert response.status == 200
    assert response.headers.get("Content-Encoding") == coding
    assert "Accept-Encoding" in response.headers["Vary"]
    raw = await response.read()
    assert int(response.headers["Content-Length"]) == len(raw)
    decoded = {"gzip": gzip.decompress, "br": brotli.decompress, None: bytes}[coding](raw)
    assert decoded == identity
    if coding:
        assert response.headers["ETag"] != plain.headers["ETag"]
        again = await served.get(
            path, headers={"Accept-Encoding": accept, "If-None-Match": response.headers["ETag"]}
        )
        assert again.status == 304
    if coding and path == "/api/snapshot":
        assert len(raw) < len(identity) / 3


async def test_compressed_history_follows_new_crawls(served: Client, data_dir: Path):
    headers = {"Accept-Encoding": "gzip"}
    before = await (await served.get("/api/history?limit=10", headers=headers)).json()
    write_snapshot(data_dir, TS + 1800, export_body(rows(7)))
    await served.app[NETWORKS][0].refresher.refresh()
    after = await (await served.get("/api/history?limit=10", headers=headers)).json()
    assert after[:-1] == before
    assert after[-1] == {"timestamp": TS + 1800, "reachable": 7}


async def test_refusing_every_coding_is_406(served: Client):
    response = await served.get("/api/snapshot", headers={"Accept-Encoding": "identity;q=0, *;q=0"})
    assert response.status == 406
    assert (await response.json())["error"]["code"] == "not_acceptable"


def test_negotiation_rules():
    assert negotiate(None) == "identity"
    assert negotiate("gzip;q=0, identity;q=0.5") == "identity"
    assert negotiate("br;q=0.1, gzip;q=0.9") == "gzip"
    assert negotiate("*;q=0, gzip") == "gzip"
    assert negotiate("identity;q=0") is None
    assert negotiate("gzip;q=abc") == "identity"


async def test_cache_control_follows_the_crawl_interval(serve, data_dir):
    now = int(time.time())
    for i in range(4):
        write_snapshot(data_dir, now - 300 - 600 * (3 - i), export_body(rows(5)))
    client = await serve()
    for path in ("/api/snapshot", "/api/history"):
        cache_control = (await client.get(path)).headers["Cache-Control"]
        assert cache_control.startswith("public, max-age=")
        assert 290 <= int(cache_control.split("=")[1]) <= 300  # next crawl due in ~300 s
    assert (await client.get("/api/status")).headers["Cache-Control"] == "no-cache"


async def test_kept_answers_follow_each_new_crawl(serve, data_dir):
    now = int(time.time())
    for i in range(3):
        write_snapshot(data_dir, now - 300 - 600 * (2 - i), export_body(rows(5 + i)))
    client = await serve()
    await watching(client)
    codings = ("gzip", "br", "identity")

    async def asked() -> list[tuple[list[int], int]]:
        answers = []
        for coding in codings:
            response = await client.get("/api/history", headers={"Accept-Encoding": coding})
            assert response.headers.get("Content-Encoding", "identity") == coding
            points = [point["reachable"] for point in await response.json()]
            answers.append((points, int(response.headers["Cache-Control"].split("=")[1])))
        refused = await client.get("/api/history", headers={"Accept-Encoding": "*;q=0"})
        assert refused.status == 406  # an error is never kept in place of an answer
        return answers

    for points, max_age in await asked() + await asked():
        assert points == [5, 6, 7]
        assert 290 <= max_age <= 300
    write_snapshot(data_dir, now - 10, export_body(rows(9)))  # the next is due in 590 s

    await until_served(client, now - 10)  # whole: its first answers come ahead of the rest
    for points, max_age in await asked():
        assert points == [5, 6, 7, 9]
        assert 580 <= max_age <= 590


async def test_cache_max_age_setting_wins(serve, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(5)))
    client = await serve(cache_max_age=42)
    assert (await client.get("/api/snapshot")).headers["Cache-Control"] == "public, max-age=42"


async def test_head_matches_get_headers(served: Client):
    get = await served.get("/api/snapshot", headers={"Accept-Encoding": "gzip"})
    head = await served.head("/api/snapshot", headers={"Accept-Encoding": "gzip"})
    for name in ("ETag", "Last-Modified", "Content-Encoding", "Content-Length", "Cache-Control"):
        assert head.headers[name] == get.headers[name]
    assert await head.read() == b""


@pytest.mark.parametrize(
    "path",
    [
        *(p.replace("{name:.+}", "app.js") for p in EVERY_PATH if p != "/api/events"),
        "/api/check",
        "/api/check?address=203.0.113.9:8333",
        "/static/nope.js",
        "/nowhere",
    ],
)
async def test_nosniff_everywhere_and_no_cors_by_default(served: Client, path: str):
    for method in ("GET", "HEAD", "POST"):
        response = await served.request(method, path, headers={"Origin": "https://a.example"})
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert "Access-Control-Allow-Origin" not in response.headers
    assert (await served.options(path)).status == 405


async def test_cors_for_named_origins(aiohttp_client, tmp_path, data_dir):
    write_snapshot(data_dir, TS, export_body(rows(5)))
    settings = Settings(
        data_dir=data_dir, state_dir=tmp_path / "s", cors_origins=("https://dash.example",)
    )
    client = await aiohttp_client(create_app(settings))
    allowed = await client.get("/api/status", headers={"Origin": "https://dash.example"})
    assert allowed.headers["Access-Control-Allow-Origin"] == "https://dash.example"
    assert "ETag" in allowed.headers["Access-Control-Expose-Headers"]
    other = await client.get("/api/status", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in other.headers
    for response in (allowed, other, await client.get("/api/snapshot")):
        # Answers differ by Origin: a shared cache must not hand one origin's to another.
        assert "Origin" in response.headers.getall("Vary"), response.headers
    preflight = await client.options(
        "/api/history",
        headers={
            "Origin": "https://dash.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "if-none-match",
        },
    )
    assert preflight.status == 204
    assert "GET" in preflight.headers["Access-Control-Allow-Methods"]
    assert "If-None-Match" in preflight.headers["Access-Control-Allow-Headers"]
    assert preflight.headers["Access-Control-Allow-Origin"] == "https://dash.example"
    refused = await client.options(
        "/api/history",
        headers={"Origin": "https://dash.example", "Access-Control-Request-Method": "DELETE"},
    )
    assert refused.status == 405


async def test_openapi_document_describes_every_endpoint(served: Client):
    response = await served.get("/api/openapi.json")
    assert response.status == 200
    document = msgspec.json.decode(await response.read())
    assert document["openapi"] == "3.1.0"
    # every route, nothing else; a path without its final slash is the same route, asked
    # as bitnodes.io's clients ask it (a redirect: tests/test_unslashed.py)
    slashed = {path for path in EVERY_PATH if path + "/" not in EVERY_PATH}
    every_route = {path.replace("{name:.+}", "{name}") for path in slashed}
    assert set(document["paths"]) == every_route
    events = document["paths"]["/api/events"]["get"]["responses"]["200"]["content"]
    assert list(events) == ["text/event-stream"]
    schemas = document["components"]["schemas"]
    assert set(schemas["StatusBody"]["properties"]) == set(
        await (await served.get("/api/status")).json()
    )
    assert schemas["NodeRow"]["type"] == "array"
    limit = document["paths"]["/api/history"]["get"]["parameters"][0]
    assert limit["schema"] == {"type": "integer", "minimum": 1, "default": 144}
    assert (
        "oldest first"
        in document["paths"]["/api/history"]["get"]["responses"]["200"]["description"]
    )
    assert set(document["paths"]["/api/check"]["get"]["responses"]) == {"200", "400", "503"}
