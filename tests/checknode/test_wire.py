"""crawldash's wire format (checknode/wire.py) against python-bitcoinlib's, both ways."""

from __future__ import annotations

import io
from ipaddress import IPv6Address

import pytest
from bitcoin.core.serialize import VarIntSerializer
from bitcoin.messages import MsgSerializable, msg_verack, msg_version
from bitcoin.net import CAddress
from hypothesis import given
from hypothesis import strategies as st

from crawldash.checknode import wire

from ..bitcoin_peers import MAINNET, TESTNET3, with_magic

hosts = st.one_of(
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(str).filter(lambda ip: IPv6Address(ip).ipv4_mapped is None),
)
versions = st.builds(
    wire.Version,
    version=st.integers(70001, 2**31 - 1),
    services=st.integers(0, 2**64 - 1),
    timestamp=st.integers(0, 2**40),
    receiver=st.builds(
        wire.NetworkAddress, st.integers(0, 2**64 - 1), hosts, st.integers(0, 65535)
    ),
    sender=st.builds(wire.NetworkAddress, st.integers(0, 2**64 - 1), hosts, st.integers(0, 65535)),
    nonce=st.integers(0, 2**64 - 1),
    user_agent=st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=256),
    height=st.integers(-(2**31), 2**31 - 1),
    relay=st.booleans(),
)


@given(versions)
def test_our_version_reads_as_python_bitcoinlibs(ours: wire.Version):
    theirs = MsgSerializable.from_bytes(wire.version_message(MAINNET, ours))
    assert isinstance(theirs, msg_version)
    assert (theirs.nVersion, theirs.nServices, theirs.nTime) == (
        ours.version,
        ours.services,
        ours.timestamp,
    )
    assert (theirs.addrTo.nServices, theirs.addrTo.port) == (
        ours.receiver.services,
        ours.receiver.port,
    )
    assert theirs.addrTo.ip == ours.receiver.host
    assert (theirs.addrFrom.ip, theirs.addrFrom.port) == (ours.sender.host, ours.sender.port)
    assert theirs.nNonce == ours.nonce
    assert theirs.strSubVer == ours.user_agent.encode()
    assert theirs.nStartingHeight == ours.height
    assert bool(theirs.fRelay) == ours.relay


@given(versions)
def test_python_bitcoinlibs_version_reads_as_ours(expected: wire.Version):
    theirs = msg_version(expected.version)
    theirs.nServices, theirs.nTime, theirs.nNonce = (
        expected.services,
        expected.timestamp,
        expected.nonce,
    )
    for address, ours in ((theirs.addrTo, expected.receiver), (theirs.addrFrom, expected.sender)):
        address.nServices, address.ip, address.port = ours.services, ours.host, ours.port
    theirs.strSubVer = expected.user_agent.encode()
    theirs.nStartingHeight, theirs.fRelay = expected.height, expected.relay
    data = theirs.to_bytes()
    header = wire.parse_header(data)
    assert (header.magic, header.command, header.length) == (MAINNET, "version", len(data) - 24)
    assert header.checksum == wire.checksum(data[24:])
    assert wire.parse_version(data[24:]) == expected


def test_verack_both_ways():
    assert wire.verack(MAINNET) == msg_verack().to_bytes()
    assert isinstance(MsgSerializable.from_bytes(wire.verack(MAINNET)), msg_verack)
    header = wire.parse_header(with_magic(msg_verack().to_bytes(), TESTNET3))
    assert (header.magic, header.command, header.length) == (TESTNET3, "verack", 0)
    assert header.checksum == wire.checksum(b"")


@given(st.integers(0, 2**64 - 1))
def test_var_int_is_compact_size(value: int):
    stream = io.BytesIO()
    VarIntSerializer.stream_serialize(value, stream)
    assert wire.var_int(value) == stream.getvalue()
    assert wire.parse_var_int(b"x" + stream.getvalue(), 1) == (value, 1 + len(stream.getvalue()))


def test_an_old_version_without_the_relay_byte_is_read():
    theirs = msg_version(60002)  # python-bitcoinlib's own protocol: no relay byte
    theirs.strSubVer = b"/old:0.8/"
    parsed = wire.parse_version(theirs.to_bytes()[24:])
    assert (parsed.version, parsed.user_agent, parsed.relay) == (60002, "/old:0.8/", True)


def test_ipv4_addresses_are_mapped_as_bitcoinlib_maps_them():
    address = CAddress()
    address.ip, address.port, address.nServices = "203.0.113.7", 8333, 9
    stream = io.BytesIO()
    address.stream_serialize(stream, without_time=True)
    version = wire.Version(
        70016, 0, 0, wire.NetworkAddress(9, "203.0.113.7", 8333), wire.NetworkAddress(), 0, "", 0
    )
    assert stream.getvalue() in wire.version_payload(version)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x7f\x11\x01\x00" + bytes(20),  # cut short in the addresses
        msg_version().to_bytes()[24:-6],  # cut short in the height
        msg_version().to_bytes()[24:104] + b"\xfd\x00\x10" + b"a" * 10,  # an agent of 4096
    ],
    # bitcoinlib's version message carries a random nonce: named ids keep them stable
    ids=["empty", "cut in the addresses", "cut in the height", "agent longer than sent"],
)
def test_a_malformed_version_is_a_wire_error(payload: bytes):
    with pytest.raises(wire.WireError):
        wire.parse_version(payload)


def test_a_header_with_a_garbled_command_is_a_wire_error():
    data = bytearray(msg_verack().to_bytes())
    data[12] = ord("x")  # after the NUL that ends "verack"
    with pytest.raises(wire.WireError):
        wire.parse_header(bytes(data))
    with pytest.raises(wire.WireError):
        wire.parse_header(b"HTTP/1.1 400 Bad Request\r\n")
