"""Requests a client crafts to break the server: a ``Host`` that is no host and port, HTTP
that aiohttp refuses before crawldash sees it, and a ``--public-url`` that is no URL. Each
gets a 200 with safe links, or an error in the one JSON shape with the common headers;
never a 500, a traceback, or a version-naming ``Server`` header. Raw sockets, since
aiohttp's client would normalise the ``Host`` it sends."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from crawldash.settings.addresses import public_url

from .conftest import Serve
from .process import PATIENCE, serving
from .test_error_contract import assert_error_shape
from .test_links import counted, two_networks

BAD_HOSTS = ["h:99999", "", "a:b", "evil.com/x?y", "a b", "h:0", "[::1", "h:-1", "\u00e9.example"]
LISTS = [
    "/api/v1/snapshots/?limit=1",
    "/api/v1/inv/?limit=1",
    "/api/v1/nodes/?limit=1",
    "/api/nodes?limit=1",
    "/n/testnet4/api/v1/snapshots/?limit=1",
    "/n/testnet4/api/v1/nodes/?limit=1",
]
Answer = tuple[int, dict[str, str], bytes]


async def exchange(port: int, request: bytes) -> Answer:
    """Send ``request`` as it is and read the answer until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    received = await asyncio.wait_for(reader.read(), PATIENCE)
    writer.close()
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


def raw(port: int, request: bytes) -> Answer:
    """``exchange`` from a test without an event loop (one with a real process)."""
    return asyncio.run(exchange(port, request))


def request_for(target: str, host: str | None, *extra: str) -> bytes:
    lines = [f"GET {target} HTTP/1.1", *extra, "Connection: close"]
    if host is not None:
        lines.insert(1, f"Host: {host}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def assert_common_headers(headers: dict[str, str]) -> None:
    assert headers.get("x-content-type-options") == "nosniff", headers
    assert headers.get("server") == "crawldash", headers  # names no versions


def links_in(body: Any) -> list[str]:
    found = [body[key] for key in ("next", "previous") if isinstance(body.get(key), str)]
    return found + [r["url"] for r in body.get("results", []) if isinstance(r, dict) and "url" in r]


def assert_safe_links(body: Any, own: str) -> None:
    links = links_in(body)
    assert links, body
    for link in links:
        assert link.startswith(own + "/"), link  # the address the client connected to


@pytest.mark.parametrize("host", BAD_HOSTS)
async def test_a_bad_host_gets_safe_links_never_a_500(
    serve: Serve, tmp_path: Path, host: str, caplog: pytest.LogCaptureFixture
):
    client = await serve(**two_networks(tmp_path))
    await counted(client, "")
    await counted(client, "/n/testnet4")
    port = client.server.port
    assert port is not None
    own = f"http://127.0.0.1:{port}"
    with caplog.at_level(logging.INFO):
        for target in LISTS:
            status, headers, body = await exchange(port, request_for(target, host))
            assert status == 200, (target, body)
            assert_common_headers(headers)
            assert_safe_links(json.loads(body), own + target.partition("/api")[0])
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_no_host_at_all_gets_the_address_connected_to(serve: Serve, tmp_path: Path):
    """HTTP/1.0 needs no Host; the links must not come from the machine's own name."""
    client = await serve(**two_networks(tmp_path))
    await counted(client, "")
    port = client.server.port
    assert port is not None
    request = b"GET /api/v1/snapshots/?limit=1 HTTP/1.0\r\n\r\n"
    status, _, body = await exchange(port, request)
    assert status == 200
    assert_safe_links(json.loads(body), f"http://127.0.0.1:{port}")


HEADERS_70 = b"".join(b"X-%d: 1\r\n" % i for i in range(70))
MALFORMED = {  # what aiohttp answers itself: the request, and the code it gets
    "a bad request line": (b"GET / HTTP/1.1 what\r\nHost: h\r\n\r\n", "bad_request"),
    "an unknown method": (b"G(T / HTTP/1.1\r\nHost: h\r\n\r\n", "bad_request"),
    "TLS on the port": (b"\x16\x03\x01\x00\x00\r\n\r\n", "bad_request"),
    "an over-long URL": (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", "bad_request"),
    "an over-long header": (b"GET / HTTP/1.1\r\nX-A: " + b"a" * 9000 + b"\r\n\r\n", "bad_request"),
    "too many headers": (b"GET / HTTP/1.1\r\n" + HEADERS_70 + b"\r\n", "bad_request"),
    "a bad header name": (b"GET / HTTP/1.1\r\nHost: h\r\nX A: 1\r\n\r\n", "bad_request"),
    "a bad Content-Length": (b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", "bad_request"),
    "a bad chunk": (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad_request"),
    "CONNECT": (b"CONNECT h:1 HTTP/1.1\r\nHost: h\r\n\r\n", "not_found"),
    "a target of *": (b"OPTIONS * HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", "not_found"),
    "an unknown Expect": (
        b"GET /api/status HTTP/1.1\r\nHost: h\r\nExpect: x\r\nConnection: close\r\n\r\n",
        "expectation_failed",
    ),
}


@pytest.fixture(scope="module")
def process(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A real ``crawldash serve``: aiohttp's own answers are made where it listens."""
    folder = tmp_path_factory.mktemp("hostile")
    logs: list[str] = []
    with serving(folder / "data", folder / "state", "--log-level", "info", logs=logs) as base:
        yield int(base.rpartition(":")[2])
    assert "Traceback" not in logs[0]


@pytest.mark.parametrize("name", list(MALFORMED))
def test_aiohttp_own_refusals_have_the_one_shape(process: int, name: str):
    request, code = MALFORMED[name]
    status, headers, body = raw(process, request)
    assert 400 <= status < 500, (name, status, body)
    assert_common_headers(headers)
    assert headers.get("content-type") == "application/json", headers
    assert_error_shape(json.loads(body), status, code)


@pytest.mark.parametrize("host", BAD_HOSTS)
def test_a_bad_host_to_a_real_process_is_never_a_500(process: int, host: str):
    status, headers, body = raw(process, request_for("/api/v1/snapshots/?limit=1", host))
    assert status < 500, body
    assert_common_headers(headers)


@pytest.mark.parametrize(
    "value",
    [
        "http://u:p@h:99999",
        "http://h:99999",
        "http://h:x",
        "http://h/a b",
        'http://h/x"><img>',
        "http://h\u00e9.example/",
        "http://h/\u00e9",
        "http://h/a\tb",
        "http://h/%zz",
        "http://[::1/",
        "http:///x",
    ],
)
def test_a_bad_public_url_exits_2_with_one_line(tmp_path: Path, value: str):
    # The host cannot resolve: a value wrongly taken would exit 1 at start-up, not 2.
    command = [sys.executable, "-m", "crawldash", "serve", "--data-dir", str(tmp_path)]
    command += ["--host", "nonexistent.invalid", "--public-url", value]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "--public-url" in lines[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("https://example.org/crawldash/", "https://example.org/crawldash"),
        ("http://[2001:db8::1]:8080/x", "http://[2001:db8::1]:8080/x"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("https://h/a%20b/~c", "https://h/a%20b/~c"),
        ("http://xn--hxajbheg2az3al.example/", "http://xn--hxajbheg2az3al.example"),
    ],
)
def test_a_good_public_url_is_kept(value: str, kept: str):
    assert public_url(value) == kept
