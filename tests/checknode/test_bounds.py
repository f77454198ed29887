"""checknode/bounds.py: the live check's bounds and which client a request is from."""

from __future__ import annotations

import asyncio
import ipaddress

import pytest

from crawldash.checknode.bounds import (
    ClientLimit,
    InFlight,
    Repeats,
    Resting,
    client_address,
    client_key,
)
from crawldash.checknode.handshake import Outcome

PROXY = (ipaddress.ip_network("10.0.0.0/8"),)


def test_a_client_limit_counts_per_key_and_says_how_long_to_wait():
    limit = ClientLimit(per_minute=2)
    assert limit.admit("a") is None
    assert limit.admit("a") is None
    wait = limit.admit("a")
    assert wait is not None
    assert 1 <= wait <= 60
    assert limit.wait("b") is None
    assert limit.admit("b") is None


def test_a_client_limit_forgets_what_is_past_its_window():
    limit = ClientLimit(per_minute=1, window=0.0)
    assert limit.admit("a") is None
    assert limit.admit("a") is None


def test_in_flight_says_which_bound_is_full():
    flight = InFlight(limit=3, per_client=2, per_host=1)
    assert flight.no_room("c", "h1") is None
    flight.take("c", "h1")
    assert flight.no_room("d", "h1") == "host_busy"
    flight.take("c", "h2")
    assert flight.no_room("c", "h3") == "client_busy"
    flight.take("d", "h3")
    assert flight.full
    assert flight.no_room("e", "h4") == "busy"
    flight.give_back("c", "h1")
    assert flight.no_room("e", "h1") is None
    assert flight.running == 2


def test_resting_hosts_wait_out_the_window():
    resting = Resting(window=60)
    resting.rest("h")
    wait = resting.wait("h")
    assert wait is not None
    assert 59 <= wait <= 60
    assert resting.wait("other") is None
    assert Resting(window=0).wait("h") is None


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("203.0.113.9", "198.51.100.1", "203.0.113.9"),  # not a proxy: the header is ignored
        ("10.0.0.2", "198.51.100.1", "198.51.100.1"),
        ("10.0.0.2", "6.6.6.6, 198.51.100.1, 10.0.0.3", "198.51.100.1"),  # rightmost untrusted
        ("10.0.0.2", ["6.6.6.6", "198.51.100.1"], "198.51.100.1"),  # several lines: one list
        ("10.0.0.2", "junk", "10.0.0.2"),  # not an address: the proxy is the client
        ("10.0.0.2", None, "10.0.0.2"),
        (None, None, "unknown"),
    ],
)
def test_client_address(peer: str | None, forwarded: str | list[str] | None, client: str):
    assert client_address(peer, forwarded, PROXY) == client


def test_client_keys_count_an_ipv6_client_by_its_prefix():
    assert client_key("2001:db8:1:2:3::4", 64) == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:2:3::4", 48) == "2001:db8:1::/48"
    assert client_key("::ffff:198.51.100.1", 64) == "198.51.100.1"
    assert client_key("198.51.100.1", 64) == "198.51.100.1"
    assert client_key("unknown", 64) == "unknown"
    assert client_address("2001:db8::1", None, PROXY, ipv6_prefix=32) == "2001:db8::/32"


async def test_a_repeat_shares_the_first_checks_answer():
    repeats = Repeats()
    runs = 0

    async def run() -> Outcome:
        nonlocal runs
        runs += 1
        return Outcome("refused")

    key = ("198.51.100.1", 8333)
    assert repeats.find(key) is None
    task = repeats.start(key, run)
    assert repeats.find(key) is task
    checked = await task
    assert (checked.outcome.reason, runs) == ("refused", 1)
    assert repeats.find(key) is task


async def test_a_failed_check_is_not_kept():
    repeats = Repeats()

    async def fail() -> Outcome:
        raise RuntimeError("no")

    key = ("198.51.100.1", 8333)
    task = repeats.start(key, fail)
    with pytest.raises(RuntimeError):
        await task
    await asyncio.sleep(0)  # the done callback runs on the next turn
    assert repeats.find(key) is None
