"""Which targets the live check connects to, and under which name, with public addresses
on the loopback device of a network namespace of the test's own (``tests/netns.py``):
each node has one canonical spelling (no zone, an IPv4-mapped address is its IPv4
address, IPv6 compressed), so that one node is checked once a minute however it is
written; and every block of IANA's special-purpose registries is refused, by its first
and its last address, while public addresses, the registry's globally reachable ones
among them, are checked."""

from __future__ import annotations

import contextlib
import ipaddress
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer

from crawldash.app import create_app
from crawldash.settings.serve import Settings

from .bitcoin_peers import bitcoin_node, listening
from .netns import in_own_network

ROUTE = "/api/v1/checknode/"
PORT = 8333  # the namespace is the test's own: nothing else listens there


@contextlib.asynccontextmanager
async def live_server(folder: Path, host: str = "127.0.0.1", **options: Any) -> AsyncIterator[str]:
    """A real server with the live check on (mainnet), on a real socket at ``host``: its
    base URL. No range is allowed back unless ``options`` say so."""
    data = folder / "data"
    data.mkdir(exist_ok=True)
    settings = Settings(
        data_dir=data,
        state_dir=folder / "state",
        debounce_ms=50,
        live_check=("main",),
        live_check_magic=(("main", "f9beb4d9"),),
        **{"live_check_per_client": 10_000, **options},
    )
    async with TestServer(create_app(settings), host=host) as server:
        shown = f"[{host}]" if ":" in host else host
        yield f"http://{shown}:{server.port}"


async def ask(
    session: aiohttp.ClientSession, base: str, address: str, port: int = PORT
) -> dict[str, Any]:
    """One check: its status, error code or outcome, and answered address."""
    form = {"address": address, "port": str(port)}
    async with session.post(base + ROUTE, data=form) as response:
        body = await response.json()
    if response.status != 200:
        return {"status": response.status, "code": body["error"]["code"]}
    return {
        "status": 200,
        "success": body["success"],
        "reason": body.get("reason"),
        "address": body["address"],
        "cached": body["cached"],
    }


# Case 2: one node, many spellings.

SPELLED_HOSTS = ("8.8.8.8", "2001:4860::1")
SAME_AS_IPV4 = ("::ffff:8.8.8.8", "[::ffff:808:808]", "::FFFF:0808:0808")
SAME_AS_IPV6 = ("2001:4860:0:0:0:0:0:1", "[2001:4860::1]", "2001:4860:0000::0001", "2001:4860::1 ")
ZONED = (
    "2001:4860::1%1",
    "2001:4860::1%01",
    "2001:4860::1%001",
    "2001:4860::1%lo",
    "2001:4860::1%eth0",
    "[2001:4860::1%1]",
    "::ffff:8.8.8.8%1",
)


async def spellings(folder: Path) -> dict[str, Any]:
    handoff = folder / "handoff"
    handoff.mkdir()
    async with (
        listening(bitcoin_node(), "8.8.8.8", PORT) as ipv4,
        listening(bitcoin_node(), "2001:4860::1", PORT) as ipv6,
        live_server(folder, check_handoff_dir=(("main", handoff),)) as base,
        aiohttp.ClientSession() as session,
    ):
        answers = {
            address: await ask(session, base, address)
            for address in (*SPELLED_HOSTS, *SAME_AS_IPV4, *SAME_AS_IPV6, *ZONED)
        }
        handed = sorted(
            (json.loads(path.read_bytes())["address"], json.loads(path.read_bytes())["port"])
            for path in handoff.iterdir()
        )
    return {
        "answers": answers,
        "connections": [ipv4.connections, ipv6.connections],
        "handed": handed,
    }


def test_one_node_is_one_target_however_it_is_written():
    found = in_own_network(__name__, "spellings", SPELLED_HOSTS)
    answers = found["answers"]
    for host in SPELLED_HOSTS:
        assert answers[host] == {
            "status": 200,
            "success": True,
            "reason": None,
            "address": host,
            "cached": False,
        }
    for spelled, host in [
        *((a, "8.8.8.8") for a in SAME_AS_IPV4),
        *((a, "2001:4860::1") for a in SAME_AS_IPV6),
    ]:
        assert answers[spelled] == {**answers[host], "cached": True}, spelled
    for zoned in ZONED:  # refused as malformed, never "closed", never connected
        assert answers[zoned] == {"status": 400, "code": "invalid_address"}, zoned
    assert found["connections"] == [1, 1]  # each node saw one connection
    assert found["handed"] == sorted([["8.8.8.8", PORT], ["2001:4860::1", PORT]])


# Case 9: the special-purpose registries, written out here from IANA's pages (not taken
# from the code under test).

IPV4_SPECIAL = (
    "0.0.0.0/8",  # this network
    "10.0.0.0/8",  # private-use
    "100.64.0.0/10",  # shared address space
    "127.0.0.0/8",  # loopback
    "169.254.0.0/16",  # link-local
    "172.16.0.0/12",  # private-use
    "192.0.0.0/24",  # IETF protocol assignments, all of it
    "192.0.0.0/29",  # IPv4 service continuity prefix
    "192.0.0.170/31",  # NAT64/DNS64 discovery
    "192.0.2.0/24",  # TEST-NET-1
    "192.88.99.0/24",  # deprecated 6to4 relay anycast
    "192.168.0.0/16",  # private-use
    "198.18.0.0/15",  # benchmarking
    "198.51.100.0/24",  # TEST-NET-2
    "203.0.113.0/24",  # TEST-NET-3
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, and 255.255.255.255, limited broadcast
)
IPV6_SPECIAL = (
    "::/128",  # unspecified
    "::1/128",  # loopback
    "::/96",  # deprecated IPv4-compatible, in the reserved ::/8
    "::ffff:0:0/96",  # IPv4-mapped: judged as the IPv4 address (0.0.0.0, 255.255.255.255)
    "64:ff9b::/96",  # NAT64: judged by the IPv4 address it carries (the same two)
    "64:ff9b:1::/48",  # local-use IPv4/IPv6 translation
    "100::/64",  # discard-only
    "100:0:0:1::/64",  # dummy IPv6 prefix
    "2001::/23",  # IETF protocol assignments
    "2001::/32",  # Teredo
    "2001:2::/48",  # benchmarking
    "2001:10::/28",  # deprecated ORCHID
    "2001:db8::/32",  # documentation
    "2002::/16",  # 6to4
    "3fff::/20",  # documentation
    "5f00::/16",  # segment routing (SRv6) SIDs
    "fd00::/8",  # unique-local (fc00::/8 is cjdns: not_checkable)
    "fe80::/10",  # link-local
    "fec0::/10",  # deprecated site-local
    "ff00::/8",  # multicast
    "4000::/3",  # outside global unicast 2000::/3: reserved by the IETF
    "e000::/4",
)
NEAR_MISSES = (  # just outside a block, or not in one
    "1.1.1.1",
    "9.9.9.9",
    "100.63.255.255",
    "100.128.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "192.0.1.0",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2001:200::1",
    "2001:4860:4860::8888",
    "2606:4700:4700::1111",
)
REGISTRY_GLOBAL = (  # marked globally reachable in the registries
    "192.31.196.1",  # AS112-v4
    "192.52.193.1",  # AMT
    "192.175.48.1",  # direct delegation AS112 service
    "2001:1::1",  # port control protocol anycast
    "2001:1::2",  # TURN anycast
    "2001:3::1",  # AMT
    "2001:4:112::1",  # AS112-v6
    "2001:20::1",  # ORCHIDv2
    "2001:30::1",  # drone remote ID protocol entity tags
    "2620:4f:8000::1",  # direct delegation AS112 service
)
PUBLIC = (*NEAR_MISSES, *REGISTRY_GLOBAL)
THROUGH_NAT64 = "64:ff9b::808:808"  # 8.8.8.8 through NAT64: public, as 8.8.8.8 is


def first_and_last(blocks: tuple[str, ...]) -> list[str]:
    found = []
    for text in blocks:
        network = ipaddress.ip_network(text)
        found += [str(network[0]), str(network[-1])]
    return found


REFUSED = first_and_last(IPV4_SPECIAL + IPV6_SPECIAL)


async def registry(folder: Path) -> dict[str, Any]:
    async with contextlib.AsyncExitStack() as stack:
        peers = [
            await stack.enter_async_context(listening(bitcoin_node(), address, PORT))
            for address in (*PUBLIC, THROUGH_NAT64)
        ]
        base = await stack.enter_async_context(live_server(folder))
        session = await stack.enter_async_context(aiohttp.ClientSession())
        refused = {address: await ask(session, base, address) for address in REFUSED}
        public = {address: await ask(session, base, address) for address in PUBLIC}
        nat64 = await ask(session, base, THROUGH_NAT64)
        return {
            "refused": refused,
            "public": public,
            "nat64": nat64,
            "connections": sum(peer.connections for peer in peers),
        }


def test_special_purpose_blocks_are_refused_and_public_addresses_checked():
    found = in_own_network(__name__, "registry", (*PUBLIC, THROUGH_NAT64))
    wrongly_allowed = {
        address: answer
        for address, answer in found["refused"].items()
        if answer != {"status": 400, "code": "address_not_public"}
    }
    assert wrongly_allowed == {}
    wrongly_refused = {
        address: answer
        for address, answer in found["public"].items()
        if (answer["status"], answer.get("success")) != (200, True)
    }
    assert wrongly_refused == {}
    assert (found["nat64"]["status"], found["nat64"]["success"]) == (200, True)
    assert found["connections"] == len(PUBLIC) + 1  # each public address reached once
