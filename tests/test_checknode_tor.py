"""A live check of an onion through the operator's Tor proxy: the proxy is given the time
Tor takes to build a circuit before it answers a CONNECT, longer than a direct
connection's timeout; and a proxy that cannot be reached says nothing of the node: the
onion is ``unreachable`` from here, never ``refused`` (nothing listens on its port)."""

from __future__ import annotations

import asyncio

from .bitcoin_peers import (
    Behaviour,
    Peer,
    bitcoin_node,
    closed_port,
    connected_and_relayed,
    listening,
)
from .test_checknode import check, live

ONION = "a" * 56 + ".onion"
CONNECT_TIMEOUT = 0.2  # seconds: the proxy below takes longer to answer
CIRCUIT = 1.0  # seconds the proxy takes, as Tor building a circuit


def slow_proxy(port: int) -> Behaviour:
    """A SOCKS5 proxy that answers a CONNECT after CIRCUIT seconds, then relays to the
    node listening on ``port``."""

    async def socks(_: Peer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert await reader.readexactly(3) == b"\x05\x01\x00"
        writer.write(b"\x05\x00")
        head = await reader.readexactly(5)
        await reader.readexactly(head[4] + 2)
        await asyncio.sleep(CIRCUIT)  # the circuit is built
        await connected_and_relayed(port, reader, writer)

    return socks


async def test_the_proxy_is_given_the_time_a_circuit_takes(serve):
    async with (
        listening(bitcoin_node("/Onion:1/")) as peer,
        listening(slow_proxy(peer.port)) as proxy,
    ):
        client = await live(
            serve, tor_proxy=("127.0.0.1", proxy.port), live_check_connect_timeout=CONNECT_TIMEOUT
        )
        status, body = await check(client, ONION, 8333)
    assert (status, body["success"], body["user_agent"]) == (200, True, "/Onion:1/")


async def test_a_proxy_that_cannot_be_reached_is_no_refusal_by_the_node(serve):
    client = await live(serve, tor_proxy=("127.0.0.1", closed_port()))
    status, body = await check(client, ONION, 8333)
    assert (status, body["success"], body["reason"]) == (200, False, "unreachable")
