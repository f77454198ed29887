"""checknode/targets.py: which addresses a live check may connect to, in one spelling."""

from __future__ import annotations

import ipaddress

import pytest

from crawldash.checknode.targets import NotCheckable, Refusal, Target, target_of

from ..factories import I2P, ONION

NONE: tuple[ipaddress.IPv4Network, ...] = ()


@pytest.mark.parametrize(
    ("given", "target"),
    [
        ("8.8.8.8", Target("8.8.8.8", 8333, "ipv4")),
        (" [2606:4700:0::1111] ", Target("2606:4700::1111", 8333, "ipv6")),
        ("::ffff:8.8.8.8", Target("8.8.8.8", 8333, "ipv4")),  # the same node as its IPv4
    ],
)
def test_public_addresses_are_targets_in_their_canonical_spelling(given: str, target: Target):
    assert target_of(given, 8333, NONE, onion_proxy=False) == target


@pytest.mark.parametrize(
    ("given", "port", "code", "cause"),
    [
        ("8.8.8.8", 0, "invalid_port", "invalid"),
        ("10.0.0.1", 8333, "address_not_public", "private"),
        ("[::1]", 8333, "address_not_public", "loopback"),
        ("example.com", 8333, "host_name_not_allowed", "host_name"),
        ("1.2.3", 8333, "invalid_address", "invalid"),
        ("fe80::1%eth0", 8333, "invalid_address", "invalid"),
        ("abc.onion", 8333, "invalid_address", "invalid"),
    ],
)
def test_refusals_carry_a_code_and_a_cause(given: str, port: int, code: str, cause: str):
    with pytest.raises(Refusal) as refused:
        target_of(given, port, NONE, onion_proxy=False)
    assert (refused.value.code, refused.value.cause) == (code, cause)


def test_a_range_allowed_back_is_checked():
    allowed = (ipaddress.ip_network("10.0.0.0/8"),)
    assert target_of("10.1.2.3", 8333, allowed, False) == Target("10.1.2.3", 8333, "ipv4")


def test_only_refuses_everything_else_onions_too():
    only = (ipaddress.ip_network("8.8.8.0/24"),)
    assert target_of("8.8.8.8", 1, NONE, False, only).host == "8.8.8.8"
    for given in ("1.1.1.1", ONION):
        with pytest.raises(Refusal) as refused:
            target_of(given, 1, NONE, True, only)
        assert refused.value.code == "address_not_allowed"


def test_overlays_need_a_proxy_and_i2p_and_cjdns_are_never_checked():
    assert target_of(ONION.upper(), 9, NONE, onion_proxy=True) == Target(ONION, 9, "onion")
    for given, proxy in ((ONION, False), (I2P, True), ("fc00::1", True)):
        with pytest.raises(NotCheckable):
            target_of(given, 9, NONE, onion_proxy=proxy)


def test_host_groups_count_an_ipv6_slash_64_as_one_machine():
    assert Target("2606:4700::1111", 1, "ipv6").host_group == "2606:4700::/64"
    assert Target("64:ff9b::808:808", 1, "ipv6").host_group == "8.8.8.8"  # NAT64
    assert Target("8.8.8.8", 1, "ipv4").host_group == "8.8.8.8"
    assert Target(ONION, 1, "onion").host_group == ONION
