"""One live handshake: connect (directly, or through the SOCKS5 proxy for .onion), send
``version``, read the node's ``version`` and ``verack`` within a byte cap and strict
timeouts, and classify what happened as a success or exactly one reason. Nothing the node
says is followed: no ``addr`` is read, no second connection made."""

from __future__ import annotations

import asyncio
import errno
import secrets
import time
from dataclasses import dataclass

from .. import __version__
from ..settings.networks import KNOWN_MAGICS
from . import wire
from .socks import PROXY_SECONDS, SocksFailure, open_via_socks5
from .targets import Target

REASONS = ("refused", "timeout", "closed", "not_bitcoin", "wrong_network", "unreachable")
OTHER_MAGICS = frozenset(bytes.fromhex(magic) for magic in KNOWN_MAGICS)
UNREACHABLE = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT}
USER_AGENT = f"/crawldash:{__version__}/"


@dataclass(frozen=True)
class Limits:
    """The bounds of one check: seconds to connect, seconds for the handshake once
    connected, and bytes read from the node at most."""

    connect_timeout: float = 5.0
    timeout: float = 10.0
    max_bytes: int = 16 * 1024


@dataclass(frozen=True)
class Outcome:
    """What a check found: the node's version message on success, else the reason."""

    reason: str | None
    version: wire.Version | None = None
    handshake_ms: float | None = None

    @property
    def success(self) -> bool:
        return self.version is not None


class Failed(Exception):
    """The handshake ended with ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def handshake(
    target: Target, magic: bytes, limits: Limits, proxy: tuple[str, int] | None = None
) -> Outcome:
    """Check ``target``: one connection, one version exchange.

    Args:
        target: the node (an onion only with ``proxy``).
        magic: the network's message start.
        limits: the timeouts and byte cap.
        proxy: the SOCKS5 proxy for .onion targets.

    Returns:
        The outcome: success with the node's version, or one of REASONS.
    """
    connect = limits.connect_timeout
    if target.network == "onion":  # through the proxy, which first builds a circuit
        connect = max(connect, PROXY_SECONDS)
    try:
        reader, writer = await asyncio.wait_for(_open(target, proxy), connect)
    except Failed as failed:
        return Outcome(failed.reason)
    except TimeoutError:
        return Outcome("timeout")
    except ConnectionRefusedError:
        return Outcome("refused")
    except (OSError, asyncio.IncompleteReadError) as exc:
        unreachable = isinstance(exc, asyncio.IncompleteReadError) or exc.errno in UNREACHABLE
        return Outcome("unreachable" if unreachable else "closed")
    started = time.monotonic()
    try:
        version = await asyncio.wait_for(
            _exchange(reader, writer, target, magic, limits), limits.timeout
        )
    except Failed as failed:
        return Outcome(failed.reason)
    except TimeoutError:
        return Outcome("timeout")
    except (OSError, asyncio.IncompleteReadError):
        return Outcome("closed")
    finally:
        writer.transport.abort()  # no lingering close: the node has had its say
    return Outcome(None, version, round((time.monotonic() - started) * 1000, 1))


async def _open(
    target: Target, proxy: tuple[str, int] | None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    if target.network == "onion":
        if proxy is None:
            raise Failed("unreachable")
        try:
            return await open_via_socks5(proxy, target.host, target.port)
        except SocksFailure as failure:
            raise Failed(failure.reason) from None
    return await asyncio.open_connection(target.host, target.port, limit=1024)


class _Budget:
    """Reads from the node, refusing to read past ``left`` bytes in all."""

    def __init__(self, reader: asyncio.StreamReader, left: int) -> None:
        self.reader, self.left = reader, left

    async def read(self, count: int) -> bytes:
        if count > self.left:
            raise Failed("not_bitcoin")  # more than a handshake ever needs
        self.left -= count
        return await self.reader.readexactly(count)


async def _exchange(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    target: Target,
    magic: bytes,
    limits: Limits,
) -> wire.Version:
    """Send version; read the node's version (answered with verack), then its verack."""
    writer.write(wire.version_message(magic, _our_version(target)))
    budget, theirs = _Budget(reader, limits.max_bytes), None
    while True:
        command, payload = await _message(budget, magic)
        if theirs is None:
            if command != "version":
                raise Failed("not_bitcoin")  # a node's first message is its version
            try:
                theirs = wire.parse_version(payload)
            except wire.WireError:
                raise Failed("not_bitcoin") from None
            writer.write(wire.verack(magic))
        elif command == "verack":
            return theirs


async def _message(budget: _Budget, magic: bytes) -> tuple[str, bytes]:
    """The next message's command and payload."""
    try:
        head = await budget.read(wire.HEADER_SIZE)
    except asyncio.IncompleteReadError as exc:
        if exc.partial and not magic.startswith(exc.partial[:4]):
            raise Failed("not_bitcoin") from None  # a few bytes of something else
        raise
    if head[:4] != magic:
        raise Failed("wrong_network" if _another_network(head) else "not_bitcoin")
    try:
        header = wire.parse_header(head)
    except wire.WireError:
        raise Failed("not_bitcoin") from None
    payload = await budget.read(header.length)
    if wire.checksum(payload) != header.checksum:
        raise Failed("not_bitcoin")
    return header.command, payload


def _another_network(head: bytes) -> bool:
    """Whether a header under another magic is a Bitcoin node's of another network: one of
    the known magics, or a well-formed ``version`` (Bitcoin SV's regtest, Litecoin...).
    A real node never answers so: it reads a version in a magic not its own as garbage and
    closes without a word (the answer is then ``closed``); only a peer that speaks first,
    in its own magic, shows which network it is of."""
    if head[:4] in OTHER_MAGICS:
        return True
    try:
        return wire.parse_header(head).command == "version"
    except wire.WireError:
        return False


def _our_version(target: Target) -> wire.Version:
    """Ours: no services, the node's address as the receiver (none for an onion)."""
    onion = target.network == "onion"
    receiver = wire.NetworkAddress() if onion else wire.NetworkAddress(0, target.host, target.port)
    return wire.Version(
        version=wire.PROTOCOL_VERSION,
        services=0,
        timestamp=int(time.time()),
        receiver=receiver,
        sender=wire.NetworkAddress(),
        nonce=secrets.randbits(64),
        user_agent=USER_AGENT,
        height=0,
        relay=False,
    )
