"""A SOCKS5 CONNECT (RFC 1928) by host name, without authentication: how a live check
reaches a ``.onion`` node through the operator's Tor proxy, which resolves the name."""

from __future__ import annotations

import asyncio

SOCKS_VERSION = 5
NO_AUTHENTICATION = 0
CONNECT = 1
DOMAIN_NAME = 3
# The proxy's reply code -> the check's reason (RFC 1928 section 6).
REPLY_REASONS = {3: "unreachable", 4: "unreachable", 5: "refused", 6: "timeout"}
ADDRESS_LENGTHS = {1: 4, 4: 16}  # IPv4, IPv6; a domain name's is its first byte
# Seconds a check through the proxy may take to connect, at least: Tor builds a circuit to
# the onion before it answers a CONNECT, which takes longer than a direct connection's
# timeout allows (Bitcoin Core gives a SOCKS5 proxy 20 seconds too).
PROXY_SECONDS = 20.0


class SocksFailure(Exception):
    """The proxy did not connect: ``reason`` is the check's reason for it."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


async def open_via_socks5(
    proxy: tuple[str, int], host: str, port: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A stream to ``host:port`` through the SOCKS5 proxy at ``proxy``.

    Args:
        proxy: the proxy's (IP, port).
        host: the name the proxy connects to (a .onion), sent as a domain name.
        port: the port it connects to.

    Returns:
        The reader and writer, past the proxy's reply. SocksFailure if it refused, or
        cannot be reached (which says nothing of the node: it is unreachable from here).
    """
    try:
        reader, writer = await asyncio.open_connection(*proxy)
    except OSError as exc:
        raise SocksFailure("unreachable", f"the SOCKS5 proxy cannot be reached: {exc}") from None
    try:
        writer.write(bytes((SOCKS_VERSION, 1, NO_AUTHENTICATION)))
        if await reader.readexactly(2) != bytes((SOCKS_VERSION, NO_AUTHENTICATION)):
            raise SocksFailure("unreachable", "the proxy wants authentication or is not SOCKS5")
        name = host.encode("ascii")
        request = bytes((SOCKS_VERSION, CONNECT, 0, DOMAIN_NAME, len(name))) + name
        writer.write(request + port.to_bytes(2, "big"))
        version, reply, _, kind = await reader.readexactly(4)
        if version != SOCKS_VERSION:
            raise SocksFailure("unreachable", "the proxy's reply is not SOCKS5")
        if reply != 0:
            raise SocksFailure(REPLY_REASONS.get(reply, "unreachable"), f"SOCKS5 reply {reply}")
        length = ADDRESS_LENGTHS.get(kind)
        if length is None:
            length = (await reader.readexactly(1))[0]
        await reader.readexactly(length + 2)  # the bound address and port: not needed
    except BaseException:
        writer.transport.abort()
        raise
    return reader, writer
