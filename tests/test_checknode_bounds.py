"""The live check's bounds against clients and nodes that try to get round them, with a
real server and real peers on loopback (``--live-check-allow 127.0.0.0/8``): the client
behind a proxy is the rightmost address not a trusted proxy, over every X-Forwarded-For
line; an IPv6 client is counted by its /64; a request refused as busy costs no quota; one
client, and one host's ports, hold a bounded share of the slots; a host that answered
nothing is left alone for the minute; new connections to one host are bounded a minute.
First the plain bounds: a repeat within the minute is answered from the first check, a
client has ten checks a minute (``--live-check-per-client``), X-Forwarded-For counts from
a trusted proxy alone, the checks in flight are bounded, and so are the bytes read."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import aiohttp
from multidict import CIMultiDict

from crawldash.settings.addresses import cidrs

from .bitcoin_peers import Behaviour, Peer, bitcoin_node, closed_port, listening, silent
from .conftest import Client, Serve, eventually
from .netns import in_own_network
from .test_checknode import LOOPBACK, ROUTE, check, live
from .test_checknode_targets import live_server
from .test_error_contract import assert_error_shape

PROXY = cidrs("127.0.0.1")  # the tests' requests come from 127.0.0.1: the proxy


async def test_a_repeat_within_a_minute_is_answered_from_the_first_check(serve: Serve):
    client = await live(serve)
    async with listening(bitcoin_node(delay=0.2)) as peer:
        first, second = await asyncio.gather(
            check(client, "127.0.0.1", peer.port), check(client, "127.0.0.1", peer.port)
        )
        third = await check(client, "127.0.0.1", peer.port)
    bodies = sorted([first[1], second[1], third[1]], key=lambda body: body["cached"])
    assert [body["cached"] for body in bodies] == [False, True, True]
    assert {body["checked_at"] for body in bodies} == {bodies[0]["checked_at"]}
    assert all(body["user_agent"] == "/Satoshi:27.1.0/" for body in bodies)
    assert peer.connections == 1  # the node saw one connection


async def test_a_client_past_its_limit_is_answered_429(serve: Serve):
    client = await live(serve, live_check_per_client=2)
    port = closed_port()
    assert (await check(client, "127.0.0.1", port))[0] == 200
    assert (await check(client, "127.0.0.2", port))[0] == 200
    response = await client.post(ROUTE, data={"address": "127.0.0.3", "port": str(port)})
    assert response.status == 429
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    assert_error_shape(await response.json(), 429, "too_many_checks")


async def test_the_default_limit_is_ten_a_minute(serve: Serve):
    client = await live(serve)
    port = closed_port()
    statuses = [(await check(client, f"127.0.0.{n}", port))[0] for n in range(1, 12)]
    assert statuses == [200] * 10 + [429]


async def test_x_forwarded_for_is_honoured_only_from_a_trusted_proxy(serve: Serve):
    port = closed_port()

    async def statuses(client: Client) -> list[int]:
        found = []
        for n, forwarded in enumerate(["198.51.100.7", "198.51.100.8", "198.51.100.7"]):
            headers = {"X-Forwarded-For": f"203.0.113.99, {forwarded}"}
            found.append((await check(client, f"127.0.0.{n + 1}", port, headers=headers))[0])
        return found

    trusting = await live(serve, live_check_per_client=1, trusted_proxies=cidrs("127.0.0.1"))
    assert await statuses(trusting) == [200, 200, 429]  # one limit per forwarded client
    untrusting = await live(serve, live_check_per_client=1)
    assert await statuses(untrusting) == [200, 429, 429]  # the header is the client's own


async def test_checks_in_flight_are_bounded(serve: Serve):
    client = await live(serve, live_check_in_flight=1)
    answer = asyncio.Event()  # the slow node answers once the second check is refused
    async with listening(held(answer)) as slow, listening(bitcoin_node()) as other:
        first = asyncio.create_task(check(client, "127.0.0.1", slow.port))

        async def in_flight() -> bool:
            return slow.connections == 1  # the first check holds the one slot

        try:
            await eventually(in_flight)
            response = await client.post(ROUTE, data={"address": "127.0.0.1", "port": other.port})
        finally:
            answer.set()
        assert response.status == 503
        assert response.headers["Retry-After"]
        assert_error_shape(await response.json(), 503, "checks_busy")
        assert (await first)[1]["success"] is True
    assert other.connections == 0


def held(answer: asyncio.Event) -> Behaviour:
    """A node that says nothing until ``answer`` is set, then answers as a node does."""
    node = bitcoin_node()

    async def behave(
        peer: Peer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await answer.wait()
        await node(peer, reader, writer)

    return behave


async def test_reading_is_capped(serve: Serve):
    client = await live(serve, live_check_max_bytes=60)  # less than a version message
    async with listening(bitcoin_node()) as peer:
        status, body = await check(client, "127.0.0.1", peer.port)
    assert (status, body["reason"]) == (200, "not_bitcoin")


async def ask(
    client: Client, address: str, port: int, forwarded: Iterable[str] = ()
) -> tuple[int, dict[str, Any], str | None]:
    """One check, with an X-Forwarded-For line for each of ``forwarded``: the status,
    the body and Retry-After."""
    headers = CIMultiDict(("X-Forwarded-For", line) for line in forwarded)
    form = {"address": address, "port": str(port)}
    response = await client.post(ROUTE, data=form, headers=headers)
    return response.status, await response.json(), response.headers.get("Retry-After")


def closed_ports(count: int) -> list[int]:
    found: set[int] = set()
    while len(found) < count:
        found.add(closed_port())
    return sorted(found)


# Case 3: which client a request is from.


async def test_every_forwarded_for_line_is_read_and_the_rightmost_untrusted_is_the_client(
    serve: Serve,
):
    # HAProxy's "option forwardfor" adds a line of its own after the client's: the client
    # wrote the first line (a new address each time), the proxy the second.
    client = await live(serve, trusted_proxies=PROXY)
    port = closed_port()
    statuses = [
        (await ask(client, f"127.0.0.{n}", port, [f"198.51.100.{n}", "203.0.113.5"]))[0]
        for n in range(1, 13)
    ]
    assert statuses == [200] * 10 + [429, 429]
    # one line with every hop: the same client, already at its limit
    assert (await ask(client, "127.0.0.20", port, ["198.51.100.99, 203.0.113.5"]))[0] == 429
    # another client, behind the same proxy
    assert (await ask(client, "127.0.0.21", port, ["203.0.113.6"]))[0] == 200


async def test_an_ipv6_client_is_counted_by_its_64(serve: Serve):
    client = await live(serve, trusted_proxies=PROXY)
    port = closed_port()
    statuses = [
        (await ask(client, f"127.0.0.{n}", port, [f"2001:db8:1:2::{n:x}"]))[0] for n in range(1, 13)
    ]
    assert statuses == [200] * 10 + [429, 429]
    assert (await ask(client, "127.0.0.30", port, ["2001:db8:1:3::1"]))[0] == 200  # next /64
    narrower = await live(serve, trusted_proxies=PROXY, client_ipv6_prefix=128)
    statuses = [
        (await ask(narrower, f"127.0.0.{n}", port, [f"2001:db8:1:2::{n:x}"]))[0]
        for n in range(1, 13)
    ]
    assert statuses == [200] * 12  # --client-ipv6-prefix 128: each address a client


async def rotating_in_one_64(folder: Path) -> dict[str, Any]:
    """Clients that connect from new addresses of one /64, straight to the server."""
    port = closed_port()
    statuses: dict[str, list[int]] = {"2001:db8:1:2::/64": [], "2001:db8:1:3::/64": []}
    async with live_server(
        folder, "2001:db8:ffff::1", live_check_per_client=10, live_check_allow=LOOPBACK
    ) as base:
        for n, source in [
            *((n, f"2001:db8:1:2::{n:x}") for n in range(1, 13)),
            (13, "2001:db8:1:3::1"),
        ]:
            connector = aiohttp.TCPConnector(local_addr=(source, 0), force_close=True)
            async with aiohttp.ClientSession(connector=connector) as session:
                form = {"address": f"127.0.0.{n}", "port": str(port)}
                async with session.post(base + ROUTE, data=form) as response:
                    key = (
                        "2001:db8:1:3::/64"
                        if source.startswith("2001:db8:1:3:")
                        else "2001:db8:1:2::/64"
                    )
                    statuses[key].append(response.status)
    return statuses


def test_ipv6_clients_connecting_from_one_64_are_one_client():
    sources = [f"2001:db8:1:2::{n:x}" for n in range(1, 13)]
    found = in_own_network(
        __name__, "rotating_in_one_64", ["2001:db8:ffff::1", *sources, "2001:db8:1:3::1"]
    )
    assert found == {"2001:db8:1:2::/64": [200] * 10 + [429, 429], "2001:db8:1:3::/64": [200]}


# Case 4: the slots.


async def test_a_busy_answer_costs_the_client_none_of_its_checks(serve: Serve):
    client = await live(
        serve, trusted_proxies=PROXY, live_check_per_client=2, live_check_in_flight=1
    )
    answer = asyncio.Event()
    async with listening(held(answer)) as slow:
        first = asyncio.create_task(ask(client, "127.0.0.1", slow.port, ["198.51.100.1"]))

        async def holding() -> bool:
            return slow.connections == 1

        try:
            await eventually(holding)
            busy = [
                await ask(client, "127.0.0.2", closed_port(), ["203.0.113.7"]) for _ in range(3)
            ]
        finally:
            answer.set()
        assert (await first)[0] == 200
    for status, body, retry_after in busy:
        assert status == 503
        assert_error_shape(body, 503, "checks_busy")
        assert retry_after is not None
    port = closed_port()
    after = [(await ask(client, f"127.0.0.{n}", port, ["203.0.113.7"]))[0] for n in (3, 4, 5)]
    assert after == [200, 200, 429]  # its two checks a minute, untouched by the 503s


async def test_one_client_holds_at_most_its_slots(serve: Serve):
    client = await live(serve, trusted_proxies=PROXY, live_check_in_flight=8)
    answer = asyncio.Event()
    async with (
        listening(held(answer), "127.0.0.1") as one,
        listening(held(answer), "127.0.0.2") as two,
        listening(bitcoin_node(), "127.0.0.3") as good,
    ):
        holding = [
            asyncio.create_task(ask(client, "127.0.0.1", one.port, ["2001:db8:1:2::1"])),
            asyncio.create_task(ask(client, "127.0.0.2", two.port, ["2001:db8:1:2::2"])),
        ]

        async def both_held() -> bool:
            return one.connections == 1 and two.connections == 1

        try:
            await eventually(both_held)
            third = await ask(client, "127.0.0.3", good.port, ["2001:db8:1:2::3"])
            other = await ask(client, "127.0.0.3", good.port, ["2001:db8:1:3::1"])
        finally:
            answer.set()
        assert [(await each)[0] for each in holding] == [200, 200]
    assert third[0] == 429  # the /64's two checks under way: the default bound
    assert_error_shape(third[1], 429, "too_many_checks")
    assert "under way" in third[1]["error"]["message"]
    assert (other[0], other[1]["success"]) == (200, True)  # another client is served
    assert good.connections == 1


async def test_silent_ports_of_one_host_hold_one_slot(serve: Serve):
    # Ports of one machine that answer nothing, asked for from rotating clients, would
    # fill every slot; one host holds one.
    client = await live(serve, trusted_proxies=PROXY, live_check_in_flight=2)
    answer = asyncio.Event()
    async with contextlib.AsyncExitStack() as stack:
        silent_peers = [
            await stack.enter_async_context(listening(held(answer), "127.0.0.5")) for _ in range(4)
        ]
        good = await stack.enter_async_context(listening(bitcoin_node(), "127.0.0.6"))
        asked = []
        try:
            for n, peer in enumerate(silent_peers):
                task = asyncio.create_task(ask(client, "127.0.0.5", peer.port, [f"198.51.100.{n}"]))
                asked.append(task)

                async def started(task: asyncio.Task[Any] = task, peer: Any = peer) -> bool:
                    return task.done() or peer.connections == 1

                await eventually(started)
            legitimate = await ask(client, "127.0.0.6", good.port, ["203.0.113.7"])
        finally:
            answer.set()
        statuses = [(await task)[0] for task in asked]
    assert statuses == [200, 503, 503, 503]
    assert sum(peer.connections for peer in silent_peers) == 1
    assert (legitimate[0], legitimate[1]["success"]) == (200, True)
    text = await (await client.get("/metrics")).text()
    assert 'crawldash_live_check_refusals_total{cause="host_busy",network="main"} 3.0' in text


async def test_a_host_that_answered_nothing_is_left_alone_for_the_minute(serve: Serve):
    client = await live(serve, live_check_timeout=0.3, live_check_per_client=100)
    async with (
        listening(silent, "127.0.0.7") as quiet,
        listening(bitcoin_node(), "127.0.0.7") as node,
        listening(bitcoin_node(), "127.0.0.8") as elsewhere,
    ):
        timed_out = await ask(client, "127.0.0.7", quiet.port)
        same_host = await ask(client, "127.0.0.7", node.port)
        again = await ask(client, "127.0.0.7", quiet.port)
        other_host = await ask(client, "127.0.0.8", elsewhere.port)
    assert (timed_out[0], timed_out[1]["reason"], timed_out[1]["cached"]) == (200, "timeout", False)
    assert same_host[0] == 503
    assert_error_shape(same_host[1], 503, "checks_busy")
    assert 1 <= int(same_host[2] or 0) <= 60
    assert (again[0], again[1]["reason"], again[1]["cached"]) == (200, "timeout", True)
    assert (other_host[0], other_host[1]["success"]) == (200, True)
    assert (quiet.connections, node.connections) == (1, 0)


async def test_new_connections_to_one_host_are_bounded_a_minute(serve: Serve):
    client = await live(serve, live_check_per_client=100)
    ports = closed_ports(12)
    answers = [await ask(client, "127.0.0.9", port) for port in ports]
    assert [status for status, _, _ in answers] == [200] * 10 + [503, 503]
    assert all(body["reason"] == "refused" for _, body, _ in answers[:10])
    assert_error_shape(answers[10][1], 503, "checks_busy")
    assert 1 <= int(answers[10][2] or 0) <= 60
    again = await ask(client, "127.0.0.9", ports[0])  # a repeat is still answered
    assert (again[0], again[1]["cached"]) == (200, True)
