from __future__ import annotations

import pytest

from crawldash.crawl.address import (
    AddressError,
    canonical_address,
    canonical_host,
    format_address,
    network_of,
    parse_address,
)

from ..factories import I2P, ONION


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("203.0.113.5:8333", "203.0.113.5:8333"),
        ("[2001:DB8:0:0::1]:8333", "[2001:db8::1]:8333"),
        ("[2001:0db8:0000:0000:0000:0000:0000:0001]:1", "[2001:db8::1]:1"),
        ("[::ffff:c000:280]:8333", "[::ffff:c000:280]:8333"),
        (ONION.upper() + ":8333", f"{ONION}:8333"),
        (I2P.upper() + ":65535", f"{I2P}:65535"),
        ("203.0.113.5:08333", "203.0.113.5:8333"),
    ],
)
def test_spellings_parse_to_one_canonical_form(text: str, canonical: str):
    assert parse_address(text) == canonical
    assert parse_address(canonical) == canonical


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "host:port"),
        ("8333", "host:port"),
        ("example.com:8333", "DNS names"),
        ("2001:db8::1:8333", "brackets"),
        ("[2001:db8::1:8333", "close"),
        ("[203.0.113.5]:8333", "only IPv6"),
        ("[2001:db8::zz]:8333", "not a valid IPv6"),
        ("[fe80::1%eth0]:8333", "zone"),
        ("203.0.113.5:0", "outside 1-65535"),
        ("203.0.113.5:65536", "outside 1-65535"),
        ("203.0.113.5:-1", "whole number"),
        ("203.0.113.5:+80", "whole number"),
        ("203.0.113.5:", "whole number"),
        ("203.0.113.05:8333", "not a dotted IPv4"),
        ("256.0.0.1:8333", "not a dotted IPv4"),
        ("abc.onion:8333", "56 base32"),
        ("a" * 55 + "1.onion:8333", "56 base32"),
        ("abc.b32.i2p:8333", "52 base32"),
        ("1" * 101, "longer than 100"),
    ],
)
def test_malformed_addresses_say_why(text: str, reason: str):
    with pytest.raises(AddressError, match=reason):
        parse_address(text)


def test_export_rows_use_unbracketed_ipv6():
    assert canonical_address("2001:DB8::1", 8333) == "[2001:db8::1]:8333"
    with pytest.raises(AddressError):
        canonical_address("203.0.113.5", 0)


@pytest.mark.parametrize(
    ("host", "network"),
    [
        ("203.0.113.5", "ipv4"),
        ("2001:db8::1", "ipv6"),
        ("fc00::1", "cjdns"),
        ("fcff:ffff::1", "cjdns"),
        ("fd00::1", "ipv6"),
        (ONION, "onion"),
        (I2P, "i2p"),
    ],
)
def test_network_of(host: str, network: str):
    assert network_of(host) == network


def test_format_address_brackets_ipv6_only():
    assert format_address("2001:db8::1", 8333) == "[2001:db8::1]:8333"
    assert format_address("203.0.113.5", 8333) == "203.0.113.5:8333"
    assert format_address(ONION, 9050) == f"{ONION}:9050"


def test_an_ipv4_mapped_host_keeps_its_ipv6_spelling():
    assert canonical_host("::FFFF:192.0.2.128") == "::ffff:c000:280"
    assert canonical_host("2001:DB8:0::1") == "2001:db8::1"
