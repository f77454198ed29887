"""checknode/special.py: IANA's special-purpose blocks, and which addresses are public."""

from __future__ import annotations

import ipaddress

import pytest

from crawldash.checknode.special import NOT_PUBLIC, OUTSIDE_UNICAST, not_public


@pytest.mark.parametrize(
    ("address", "cause"),
    [
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "reserved"),
        ("10.1.2.3", "private"),
        ("100.64.0.1", "shared"),
        ("127.0.0.1", "loopback"),
        ("169.254.1.1", "link_local"),
        ("172.31.255.255", "private"),
        ("192.0.2.1", "documentation"),
        ("198.18.0.1", "benchmarking"),
        ("224.0.0.1", "multicast"),
        ("255.255.255.255", "reserved"),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("2001::1", "special_purpose"),  # Teredo
        ("2001:db8::1", "documentation"),
        ("2002:c000:201::1", "special_purpose"),  # 6to4
        ("fd00::1", "private"),
        ("fe80::1", "link_local"),
        ("ff02::1", "multicast"),
        ("::ffff:10.0.0.1", "private"),  # mapped: judged as its IPv4 address
        ("64:ff9b::7f00:1", "loopback"),  # NAT64 of 127.0.0.1
    ],
)
def test_special_purpose_addresses_are_not_public(address: str, cause: str):
    block = not_public(ipaddress.ip_address(address))
    assert block is not None
    assert block.cause == cause


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "172.32.0.1",
        "2606:4700::1111",
        "2001:4:112::1",
        "64:ff9b::808:808",
        "::ffff:1.1.1.1",
    ],
)
def test_public_addresses_pass(address: str):
    assert not_public(ipaddress.ip_address(address)) is None


def test_the_more_specific_block_names_the_reason():
    block = not_public(ipaddress.ip_address("0.0.0.0"))
    assert block is not None
    assert block.name == "this host on this network"
    block = not_public(ipaddress.ip_address("2001:2::1"))
    assert block is not None
    assert block.cause == "benchmarking"


def test_ipv6_outside_global_unicast_is_reserved():
    assert not_public(ipaddress.ip_address("4000::1")) is OUTSIDE_UNICAST
    assert OUTSIDE_UNICAST.cause == "reserved"


def test_every_block_is_a_network_with_a_cause_and_a_name():
    assert all(block.cause and block.name for block in NOT_PUBLIC)
    assert {block.network.version for block in NOT_PUBLIC} == {4, 6}
