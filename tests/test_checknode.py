"""POST /api/v1/checknode/ against real peers on loopback (``--live-check-allow
127.0.0.0/8``), whose Bitcoin messages python-bitcoinlib makes and reads: every reason,
a success, and every refusal."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bitcoin.messages import msg_verack, msg_version

from crawldash.settings.addresses import cidrs

from .bitcoin_peers import (
    TESTNET3,
    Peer,
    bitcoin_node,
    closed_port,
    connected_and_relayed,
    http_server,
    listening,
    silent,
)
from .chromium import CHROMIUM, FLAGS
from .conftest import Client, Serve
from .factories import export_body, rows, write_snapshot
from .process import serving
from .test_error_contract import assert_error_shape

ROUTE = "/api/v1/checknode/"
LOOPBACK = cidrs("127.0.0.0/8")
ON = {"live_check": ("main",), "live_check_magic": (("main", "f9beb4d9"),)}


async def live(serve: Serve, **options: Any) -> Client:
    return await serve(**{**ON, "live_check_allow": LOOPBACK, **options})


async def check(client: Client, address: str, port: int, **kwargs: Any) -> tuple[int, Any]:
    response = await client.post(ROUTE, data={"address": address, "port": str(port)}, **kwargs)
    return response.status, await response.json()


async def test_a_node_answers_with_its_user_agent_and_height(serve: Serve):
    client = await live(serve)
    async with listening(bitcoin_node("/Satoshi:27.1.0/", 905_123, 1033)) as peer:
        status, body = await check(client, "127.0.0.1", peer.port)
        await asyncio.sleep(0.05)
    assert status == 200
    assert body["success"] is True
    assert (body["address"], body["port"], body["cached"]) == ("127.0.0.1", peer.port, False)
    assert body["user_agent"] == "/Satoshi:27.1.0/"
    assert body["height"] == 905_123
    assert body["services"] == 1033
    assert body["version"] == msg_version().nVersion
    assert 0 < body["handshake_ms"] < 5000
    assert "reason" not in body
    # the peer read a version (ours) and a verack, with python-bitcoinlib
    ours = peer.received[0]
    assert isinstance(ours, msg_version)
    assert ours.strSubVer.startswith(b"/crawldash:")
    assert (ours.addrTo.ip, ours.addrTo.port) == ("127.0.0.1", peer.port)
    assert any(isinstance(message, msg_verack) for message in peer.received[1:])


async def test_json_bodies_are_taken_too(serve: Serve):
    client = await live(serve)
    async with listening(bitcoin_node("/Knots:28.1/", 12)) as peer:
        response = await client.post(ROUTE, json={"address": "127.0.0.1", "port": peer.port})
        body = await response.json()
    assert response.status == 200
    assert (body["success"], body["user_agent"], body["height"]) == (True, "/Knots:28.1/", 12)


async def test_a_closed_port_is_refused(serve: Serve):
    client = await live(serve)
    status, body = await check(client, "127.0.0.1", closed_port())
    assert (status, body["success"], body["reason"]) == (200, False, "refused")
    assert "user_agent" not in body


async def test_a_port_that_says_nothing_times_out(serve: Serve):
    client = await live(serve, live_check_timeout=0.5)
    async with listening(silent) as peer:
        status, body = await check(client, "127.0.0.1", peer.port)
    assert (status, body["success"], body["reason"]) == (200, False, "timeout")
    assert peer.connections == 1


async def test_a_node_that_closes_after_its_version_is_closed(serve: Serve):
    client = await live(serve)
    async with listening(bitcoin_node(close_after_version=True)) as peer:
        status, body = await check(client, "127.0.0.1", peer.port)
    assert (status, body["success"], body["reason"]) == (200, False, "closed")


async def test_an_http_server_is_not_bitcoin(serve: Serve):
    client = await live(serve)
    async with http_server() as port:
        status, body = await check(client, "127.0.0.1", port)
    assert (status, body["success"], body["reason"]) == (200, False, "not_bitcoin")


async def test_a_testnet_node_closes_as_real_nodes_do(serve: Serve):
    """A real node reads a version in another network's magic as garbage and closes
    without a word: the answer is ``closed``, and its detail names what that can mean."""
    client = await live(serve)
    async with listening(bitcoin_node(magic=TESTNET3)) as peer:
        status, body = await check(client, "127.0.0.1", peer.port)
    assert (status, body["success"], body["reason"]) == (200, False, "closed")
    assert peer.received == []  # it read our header's magic, and nothing more
    for meaning in ("another network", "full node", "banned"):
        assert meaning in body["detail"], meaning


async def test_a_peer_that_answers_in_another_magic_is_the_wrong_network(serve: Serve):
    client = await live(serve)
    async with listening(bitcoin_node(magic=TESTNET3, speaks_first=True)) as peer:
        status, body = await check(client, "127.0.0.1", peer.port)
    assert (status, body["success"], body["reason"]) == (200, False, "wrong_network")
    assert "another network" in body["detail"]


async def test_a_version_in_an_unknown_magic_is_the_wrong_network(serve: Serve):
    # Bitcoin SV's regtest magic, in no list of crawldash's: a well-formed version all the same
    client = await live(serve)
    other = bytes.fromhex("dab5bffa")
    async with listening(bitcoin_node(magic=other, speaks_first=True)) as peer:
        status, body = await check(client, "127.0.0.1", peer.port)
    assert (status, body["success"], body["reason"]) == (200, False, "wrong_network")


async def test_the_testnet_node_succeeds_on_testnet(serve: Serve):
    client = await live(serve, live_check_magic=(("main", "0b110907"),))
    async with listening(bitcoin_node(magic=TESTNET3, height=4_000_000)) as peer:
        status, body = await check(client, "127.0.0.1", peer.port)
    assert (status, body["success"], body["height"]) == (200, True, 4_000_000)


async def test_no_route_is_unreachable(serve: Serve):
    # Linux refuses a TCP connection to a multicast address at once: ENETUNREACH.
    client = await live(serve, live_check_allow=cidrs("224.0.0.0/4"))
    status, body = await check(client, "239.1.2.3", 8333)
    assert (status, body["success"], body["reason"]) == (200, False, "unreachable")


@pytest.mark.parametrize(
    "address",
    ["a" * 56 + ".onion", "b" * 52 + ".b32.i2p", "fc00::1", "[fc12::1]"],
)
async def test_overlay_networks_without_a_proxy_are_not_checkable(serve: Serve, address: str):
    client = await live(serve)
    status, body = await check(client, address, 8333)
    assert (status, body["success"], body["reason"]) == (200, False, "not_checkable")


@pytest.mark.parametrize(
    ("address", "code"),
    [
        ("127.0.0.1", "address_not_public"),
        ("10.1.2.3", "address_not_public"),
        ("192.168.1.1", "address_not_public"),
        ("169.254.169.254", "address_not_public"),
        ("100.64.0.1", "address_not_public"),
        ("0.0.0.0", "address_not_public"),
        ("224.0.0.1", "address_not_public"),
        ("240.0.0.1", "address_not_public"),
        ("192.0.2.10", "address_not_public"),
        ("::1", "address_not_public"),
        ("[::1]", "address_not_public"),
        ("fe80::1", "address_not_public"),
        ("ff02::1", "address_not_public"),
        ("2001:db8::1", "address_not_public"),
        ("::ffff:127.0.0.1", "address_not_public"),
        ("::ffff:10.0.0.1", "address_not_public"),
        ("64:ff9b::7f00:1", "address_not_public"),
        ("64:ff9b::a00:1", "address_not_public"),
        ("2002:7f00:1::1", "address_not_public"),
        ("localhost", "host_name_not_allowed"),
        ("node.example.com", "host_name_not_allowed"),
        ("1.2.3", "invalid_address"),
        ("1.2.3.4%eth0", "invalid_address"),
        ("abc.onion", "invalid_address"),
    ],
)
async def test_targets_that_are_not_public_are_refused(serve: Serve, address: str, code: str):
    client = await serve(**ON)  # no range allowed back
    async with listening(bitcoin_node()) as peer:
        status, body = await check(client, address, peer.port)
    assert status == 400
    assert_error_shape(body, 400, code)
    assert peer.connections == 0


async def test_loopback_needs_the_allow_option(serve: Serve):
    async with listening(bitcoin_node()) as peer:
        refused = await serve(**ON)
        assert (await check(refused, "127.0.0.1", peer.port))[0] == 400
        allowed = await live(serve)
        assert (await check(allowed, "127.0.0.1", peer.port))[1]["success"] is True
    assert peer.connections == 1


async def test_only_the_ranges_of_live_check_only_are_ever_connected_to(serve: Serve):
    """--live-check-only: an address outside it is refused before any connection, public
    or allowed back as it may be; one inside it is checked (the demo's peer, alone)."""
    only = cidrs("127.0.0.2/32")
    client = await live(serve, live_check_only=only)
    async with listening(bitcoin_node(), host="127.0.0.3") as other:
        status, body = await check(client, "127.0.0.3", other.port)
    assert status == 400
    assert_error_shape(body, 400, "address_not_allowed")
    assert other.connections == 0
    for elsewhere in ("8.8.8.8", "2001:4860::8888", "a" * 56 + ".onion"):
        status, body = await check(client, elsewhere, 8333)
        assert (status, body["error"]["code"]) == (400, "address_not_allowed")
    async with listening(bitcoin_node(), host="127.0.0.2") as mine:
        status, body = await check(client, "127.0.0.2", mine.port)
    assert (status, body["success"]) == (200, True)
    assert mine.connections == 1
    metrics = await (await client.get("/metrics")).text()
    assert 'crawldash_live_check_refusals_total{cause="not_allowed",network="main"} 4.0' in metrics


async def test_a_bitnodes_io_client_works_unchanged(serve: Serve):
    """As the bitcoind emulator and node setups called bitnodes.io: urllib, a form body."""
    client = await live(serve)
    url = str(client.make_url(ROUTE))

    def bitnodes_client(port: int) -> str:
        data = urllib.parse.urlencode({"address": "127.0.0.1", "port": port}).encode()
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10) as reply:
            return str(json.loads(reply.read())["user_agent"])

    async with listening(bitcoin_node("/Satoshi:0.21.0/")) as peer:
        assert await asyncio.to_thread(bitnodes_client, peer.port) == "/Satoshi:0.21.0/"


async def test_metrics_count_outcomes_and_refusals(serve: Serve):
    client = await live(serve, live_check_per_client=1000)
    async with listening(bitcoin_node()) as peer:
        await check(client, "127.0.0.1", peer.port)
        await check(client, "127.0.0.1", peer.port)
    await check(client, "127.0.0.1", closed_port())
    await check(client, "localhost", 8333)
    text = await (await client.get("/metrics")).text()
    assert (
        'crawldash_live_checks_total{cached="false",network="main",outcome="success"} 1.0' in text
    )
    assert 'crawldash_live_checks_total{cached="true",network="main",outcome="success"} 1.0' in text
    assert (
        'crawldash_live_checks_total{cached="false",network="main",outcome="refused"} 1.0' in text
    )
    assert 'crawldash_live_check_refusals_total{cause="host_name",network="main"} 1.0' in text


async def test_a_success_is_left_for_the_bridge(serve: Serve, tmp_path: Path):
    folder = tmp_path / "handoff"
    folder.mkdir()
    client = await live(serve, check_handoff_dir=(("main", folder),))
    await check(client, "127.0.0.1", closed_port())  # a failure is not handed over
    async with listening(bitcoin_node(services=1037)) as peer:
        assert (await check(client, "127.0.0.1", peer.port))[1]["success"] is True
    files = [path for path in folder.iterdir()]
    assert len(files) == 1
    assert files[0].suffix == ".json"
    handed = json.loads(files[0].read_bytes())
    assert (handed["address"], handed["port"], handed["services"]) == ("127.0.0.1", peer.port, 1037)
    assert stat.S_IMODE(os.stat(files[0]).st_mode) == 0o640


async def test_an_onion_goes_through_the_socks5_proxy(serve: Serve):
    onion = "a" * 56 + ".onion"
    asked: list[bytes] = []
    async with listening(bitcoin_node("/Onion:1/")) as peer:

        async def socks(
            _: Peer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> None:
            assert await reader.readexactly(3) == b"\x05\x01\x00"
            writer.write(b"\x05\x00")
            head = await reader.readexactly(5)
            asked.append(head + await reader.readexactly(head[4] + 2))
            await connected_and_relayed(peer.port, reader, writer)

        async with listening(socks) as proxy:
            client = await live(serve, tor_proxy=("127.0.0.1", proxy.port))
            status, body = await check(client, onion.upper(), 8333)
    assert (status, body["success"], body["user_agent"]) == (200, True, "/Onion:1/")
    assert body["address"] == onion
    port = (8333).to_bytes(2, "big")
    assert asked == [b"\x05\x01\x00\x03" + bytes([62]) + onion.encode() + port]


@contextlib.contextmanager
def peer_in_a_thread(user_agent: str) -> Iterator[Peer]:
    """A listening node on a loop of its own, for a test that drives a browser."""
    found: list[Peer] = []
    ready, stop = threading.Event(), threading.Event()

    async def keep() -> None:
        async with listening(bitcoin_node(user_agent)) as peer:
            found.append(peer)
            ready.set()
            await asyncio.to_thread(stop.wait)

    thread = threading.Thread(target=asyncio.run, args=(keep(),))
    thread.start()
    ready.wait(10)
    try:
        yield found[0]
    finally:
        stop.set()
        thread.join(10)


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is missing")
def test_check_now_in_chromium(tmp_path: Path):
    from playwright.sync_api import expect, sync_playwright

    data = tmp_path / "f9beb4d9"  # the magic from the folder's name
    write_snapshot(data, int(time.time()) // 600 * 600, export_body(rows(3)))
    options = ("--live-check", "main", "--live-check-allow", "127.0.0.0/8")
    with (
        peer_in_a_thread("/Satoshi:29.0.0/") as peer,
        serving(data, tmp_path / "state", *options, "--log-level", "warning") as base,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(f"{base}/")
        page.fill("#address", f"127.0.0.1:{peer.port}")
        page.click("#check-now")
        result = page.locator("#check-now-result")
        expect(result).to_contain_text("Up: /Satoshi:29.0.0/, protocol 60002, height 905,123")
        page.goto(f"{base}/nodes/127.0.0.1-{peer.port}/")
        page.click("#check-now")
        expect(result).to_contain_text("Up: /Satoshi:29.0.0/")
        expect(result).to_contain_text("one per node a minute")  # the repeat, from the first
        browser.close()
    assert peer.connections == 1
    with (
        serving(data, tmp_path / "state2", "--log-level", "warning") as base,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(f"{base}/")
        expect(page.locator("#check-form button[type=submit]")).to_be_visible()
        page.wait_for_load_state("networkidle")
        expect(page.locator("#check-now")).to_be_hidden()  # off: no button
        browser.close()
