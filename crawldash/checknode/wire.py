"""Bitcoin's wire format, as far as a handshake needs it: the message frame (magic,
command, length, checksum), ``version`` and ``verack``. Written from the protocol
documentation (developer.bitcoin.org's "P2P network" reference and BIP 14/37/111):

- a frame is a 24-byte header, then the payload: 4 bytes of magic (the network's message
  start), the command as 12 ASCII bytes padded with NULs, the payload's length (uint32,
  little-endian) and the first 4 bytes of the payload's double SHA-256;
- ``version`` is int32 version, uint64 services, int64 time, the receiver's and the
  sender's network address (uint64 services, 16 bytes of IPv6 or IPv4-mapped address, a
  big-endian uint16 port: no time field here), uint64 nonce, the user agent as a var_str,
  int32 start height and, from protocol 70001, a relay byte;
- ``verack`` has an empty payload.
"""

from __future__ import annotations

import hashlib
import ipaddress
import struct
from dataclasses import dataclass

HEADER = struct.Struct("<4s12sI4s")
HEADER_SIZE = HEADER.size  # 24
MAX_USER_AGENT = 256  # bytes, as Bitcoin Core caps it (MAX_SUBVERSION_LENGTH)
PROTOCOL_VERSION = 70016
RELAY_FROM = 70001  # the first protocol version whose version message has the relay byte
_VERSION_HEAD = struct.Struct("<iQq")
_NETWORK_ADDRESS = struct.Struct("<Q16sH")  # the port is re-read big-endian below
_IPV4_MAPPED = bytes(10) + b"\xff\xff"


class WireError(ValueError):
    """The bytes are not the message they should be; the message says why."""


@dataclass(frozen=True)
class Header:
    """A frame's header: its magic, its command (NULs stripped), its payload's length and
    checksum."""

    magic: bytes
    command: str
    length: int
    checksum: bytes


@dataclass(frozen=True)
class NetworkAddress:
    """An address as ``version`` carries it (without the time field)."""

    services: int = 0
    host: str = "0.0.0.0"
    port: int = 0


@dataclass(frozen=True)
class Version:
    """A ``version`` message's fields."""

    version: int
    services: int
    timestamp: int
    receiver: NetworkAddress
    sender: NetworkAddress
    nonce: int
    user_agent: str
    height: int
    relay: bool = True


def checksum(payload: bytes) -> bytes:
    """The first 4 bytes of the payload's double SHA-256."""
    return hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]


def frame(magic: bytes, command: str, payload: bytes = b"") -> bytes:
    """One message on the wire.

    Args:
        magic: the network's 4-byte message start.
        command: the command, at most 12 ASCII characters.
        payload: the message's payload.

    Returns:
        The header and the payload.
    """
    name = command.encode("ascii")
    if len(name) > 12 or len(magic) != 4:
        raise ValueError("a command is at most 12 bytes and a magic 4")
    return HEADER.pack(magic, name, len(payload), checksum(payload)) + payload


def parse_header(data: bytes) -> Header:
    """The header at the start of ``data`` (at least 24 bytes); WireError if its command
    is not NUL-padded ASCII."""
    magic, name, length, check = HEADER.unpack_from(data)
    command, _, padding = name.partition(b"\0")
    if padding.strip(b"\0") or not command.isascii() or not command.isalnum():
        raise WireError("the header's command is not NUL-padded ASCII")
    return Header(magic, command.decode("ascii"), length, check)


def verack(magic: bytes) -> bytes:
    """A ``verack`` message."""
    return frame(magic, "verack")


def version_message(magic: bytes, version: Version) -> bytes:
    """A ``version`` message carrying ``version``'s fields."""
    return frame(magic, "version", version_payload(version))


def version_payload(version: Version) -> bytes:
    agent = version.user_agent.encode("utf-8")
    parts = [
        _VERSION_HEAD.pack(version.version, version.services, version.timestamp),
        _address(version.receiver),
        _address(version.sender),
        struct.pack("<Q", version.nonce),
        var_int(len(agent)) + agent,
        struct.pack("<i", version.height),
    ]
    if version.version >= RELAY_FROM:
        parts.append(b"\x01" if version.relay else b"\x00")
    return b"".join(parts)


def parse_version(payload: bytes) -> Version:
    """A ``version`` payload's fields; WireError if it is cut short or malformed."""
    try:
        number, services, timestamp = _VERSION_HEAD.unpack_from(payload)
        at = _VERSION_HEAD.size
        receiver, at = _parse_address(payload, at)
        sender, at = _parse_address(payload, at)
        (nonce,) = struct.unpack_from("<Q", payload, at)
        length, at = parse_var_int(payload, at + 8)
        if length > MAX_USER_AGENT or at + length > len(payload):
            raise WireError("the user agent is longer than the message allows")
        agent = payload[at : at + length].decode("utf-8", "replace")
        (height,) = struct.unpack_from("<i", payload, at + length)
    except struct.error:
        raise WireError("the version message is cut short") from None
    relay_at = at + length + 4
    relay = payload[relay_at] != 0 if len(payload) > relay_at else True
    return Version(number, services, timestamp, receiver, sender, nonce, agent, height, relay)


def var_int(value: int) -> bytes:
    """Bitcoin's CompactSize encoding of ``value``."""
    if value < 0xFD:
        return bytes((value,))
    if value <= 0xFFFF:
        return b"\xfd" + struct.pack("<H", value)
    if value <= 0xFFFFFFFF:
        return b"\xfe" + struct.pack("<I", value)
    return b"\xff" + struct.pack("<Q", value)


def parse_var_int(data: bytes, at: int) -> tuple[int, int]:
    """(the CompactSize at ``at``, the offset after it); struct.error if cut short."""
    first = data[at] if at < len(data) else None
    if first is None:
        raise struct.error("cut short")
    widths = {0xFD: "<H", 0xFE: "<I", 0xFF: "<Q"}
    if first not in widths:
        return first, at + 1
    (value,) = struct.unpack_from(widths[first], data, at + 1)
    return value, at + 1 + struct.calcsize(widths[first])


def _address(address: NetworkAddress) -> bytes:
    ip = ipaddress.ip_address(address.host)
    packed = ip.packed if ip.version == 6 else _IPV4_MAPPED + ip.packed
    return struct.pack("<Q", address.services) + packed + struct.pack(">H", address.port)


def _parse_address(data: bytes, at: int) -> tuple[NetworkAddress, int]:
    services, packed, _ = _NETWORK_ADDRESS.unpack_from(data, at)
    (port,) = struct.unpack_from(">H", data, at + 24)
    ip = ipaddress.IPv6Address(packed)
    host = str(ip.ipv4_mapped) if ip.ipv4_mapped is not None else str(ip)
    return NetworkAddress(services, host, port), at + _NETWORK_ADDRESS.size
