"""POST /api/v1/checknode/'s requests: off unless turned on, the network's magic from the
data folder's name, POST alone, every wrong request a 4xx in the one error shape, and a
body sent in pieces read whole."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .bitcoin_peers import TESTNET3, bitcoin_node, closed_port, listening
from .conftest import Serve
from .test_checknode import LOOPBACK, ROUTE, check, live
from .test_error_contract import assert_error_shape


async def test_off_unless_turned_on(serve: Serve):
    client = await serve()
    response = await client.post(ROUTE, data={"address": "8.8.8.8", "port": "8333"})
    assert response.status == 404
    body = await response.json()
    assert_error_shape(body, 404, "not_served")
    assert "--live-check" in body["error"]["message"]
    listing = await (await client.get("/api/networks")).json()
    assert listing["networks"][0]["live_check"] is False


async def test_the_magic_comes_from_the_data_folder_name(serve: Serve, tmp_path: Path):
    folder = tmp_path / "export" / "0b110907"
    folder.mkdir(parents=True)
    client = await serve(data_dir=folder, live_check=("main",), live_check_allow=LOOPBACK)
    assert (await (await client.get("/api/networks")).json())["networks"][0]["live_check"]
    async with listening(bitcoin_node(magic=TESTNET3)) as peer:
        assert (await check(client, "127.0.0.1", peer.port))[1]["success"] is True


async def test_other_methods_are_405_naming_post(serve: Serve):
    client = await live(serve)
    for method in ("GET", "PUT", "DELETE"):
        response = await client.request(method, ROUTE)
        assert response.status == 405
        assert response.headers["Allow"] == "POST"
        assert_error_shape(await response.json(), 405, "method_not_allowed")


@pytest.mark.parametrize(
    ("body", "content_type", "status", "code"),
    [
        ("port=8333", None, 400, "missing_address"),
        ("address=&port=8333", None, 400, "missing_address"),
        ("address=8.8.8.8", None, 400, "missing_port"),
        ("address=8.8.8.8&port=0", None, 400, "invalid_port"),
        ("address=8.8.8.8&port=65536", None, 400, "invalid_port"),
        ("address=8.8.8.8&port=x", None, 400, "invalid_port"),
        ("address=8.8.8.8&address=1.1.1.1&port=1", None, 400, "invalid_address"),
        ("address=%ff&port=1", None, 400, "invalid_address"),
        ("address=\udcff", None, 400, "invalid_body"),
        ("[1, 2]", "application/json", 400, "invalid_body"),
        ("{", "application/json", 400, "invalid_body"),
        ('{"address": 5, "port": 1}', "application/json", 400, "invalid_address"),
        ('{"address": "8.8.8.8", "port": 1.5}', "application/json", 400, "invalid_port"),
        ('{"address": "8.8.8.8", "port": true}', "application/json", 400, "invalid_port"),
        ("address=" + "1" * 5000, None, 413, "payload_too_large"),
    ],
)
async def test_a_wrong_request_is_a_4xx_in_the_one_shape(serve, body, content_type, status, code):
    client = await live(serve, live_check_per_client=1000)
    headers = {"Content-Type": content_type or "application/x-www-form-urlencoded"}
    response = await client.post(
        ROUTE, data=body.encode("utf-8", "surrogateescape"), headers=headers
    )
    assert response.status == status
    assert_error_shape(await response.json(), status, code)


async def test_a_body_sent_in_pieces_is_read_whole(serve: Serve):
    client = await live(serve)

    async def pieces() -> AsyncIterator[bytes]:
        for piece in (b"addr", b"ess=127.0.0.1&po", b"rt=", str(closed_port()).encode()):
            yield piece
            await asyncio.sleep(0.05)

    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    response = await client.post(ROUTE, data=pieces(), headers=headers)  # chunked
    assert (response.status, (await response.json())["reason"]) == (200, "refused")
    too_long = await client.post(ROUTE, data=_repeated(b"x" * 1000, 5), headers=headers)
    assert_error_shape(await too_long.json(), 413, "payload_too_large")


async def _repeated(piece: bytes, times: int) -> AsyncIterator[bytes]:
    for _ in range(times):
        yield piece
