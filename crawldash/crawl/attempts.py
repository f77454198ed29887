"""The bitnodes bridge's kept crawl attempts: for each crawl, which addresses the crawler
tried and which it reached, and the rules in force, so that crawldash can say why a node is
not in an export. Both sides use the shapes here: the bridge writes, ``serve`` reads.

bitnodes' ``crawl.py`` sets a ``node:<address>-<port>-<services>`` key before each
connection attempt and adds the node to the ``up`` set once it completes a handshake; it
deletes every ``node:*`` key when the next crawl starts. The bridge reads them while a
crawl runs and keeps them per crawl, named by the crawl's timestamp (the time of its
``elapsed`` entry, which is also its crawl file's name).

One file, ``attempts.msgpack``, holds every crawl kept: each address once, in the order
first seen (the list compressed), and per crawl a compressed bitmap of the positions tried
and of those reached. A crawl tries and reaches nearly the same addresses as the one before,
so a crawl may keep a bitmap as the difference from the one before (XORed with it), where
that is smaller than the bitmap whole; one crawl in ``KEYFRAME_EVERY`` keeps both whole, so
that the newest is rebuilt from a few. Months of crawls then stay small.
"""

from __future__ import annotations

import ipaddress
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec
from pyroaring import BitMap

from .atomic import write_atomically
from .files import read_file

ATTEMPTS_FILE = "attempts.msgpack"
FORMAT = 1
MAX_ATTEMPTS_BYTES = 256 * 1024 * 1024  # far past 60 days of 100,000 addresses a crawl
MAX_ADDRESSES_BYTES = 1 << 30  # the address list, decompressed
KEYFRAME_EVERY = 144  # a day of crawls: the longest chain rebuilt to read the newest
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Rules(msgspec.Struct, frozen=True, array_like=True):
    """The crawler's rules in force during a crawl, as its Redis holds them (each checked by
    ``ipv4_rule``, ``ipv6_rule`` and ``asn_rule``), but that an IPv6 range is kept in
    64-bit halves: MessagePack holds no integer of 128 bits, as its network and netmask
    are."""

    exclude_nodes: list[str] = []  # addresses (hosts), as `exclude-nodes` lists them
    exclude_ipv4_networks: list[tuple[int, int]] = []  # (network, netmask) as integers
    # (the network's high 64 bits, its low 64 bits, the prefix length)
    exclude_ipv6_networks: list[tuple[int, int, int]] = []
    include_asns: list[int] = []  # when not empty, only these ASNs are crawled


def ipv4_rule(network: int, netmask: int) -> tuple[int, int] | None:
    """bitnodes' ``(network, netmask)`` of an IPv4 range, as kept; None unless it is one."""
    return (network, netmask) if _prefix(network, netmask, 32) is not None else None


def ipv6_rule(network: int, netmask: int) -> tuple[int, int, int] | None:
    """bitnodes' ``(network, netmask)`` of an IPv6 range, as kept (``Rules``); None unless
    it is one."""
    prefix = _prefix(network, netmask, 128)
    return None if prefix is None else (network >> 64, network & _LOW_64, prefix)


def asn_rule(asn: int) -> int | None:
    """An AS number of ``include-asns``; None unless it is one (32 bits)."""
    return asn if 0 <= asn < 1 << 32 else None


def _prefix(network: int, netmask: int, bits: int) -> int | None:
    """The prefix length of a range of ``bits``-bit addresses given as integers, as
    ``ipaddress`` gives them: a netmask of leading ones, a network within it; else None."""
    if not (0 <= netmask < 1 << bits and 0 <= network < 1 << bits) or network & ~netmask:
        return None
    prefix = netmask.bit_count()
    return prefix if netmask == ((1 << prefix) - 1) << (bits - prefix) else None


_LOW_64 = (1 << 64) - 1


class KeptCrawl(msgspec.Struct, frozen=True, array_like=True):
    timestamp: int
    complete: bool  # the bridge watched the crawl from its start to its end
    tried: bytes  # a serialised BitMap of positions in the address list
    reached: bytes
    rules: int  # index in KeptAttempts.rules
    tried_whole: bool  # tried as it is, else XORed with the crawl before's
    reached_whole: bool

    @property
    def whole(self) -> bool:
        """Both bitmaps as they are: a crawl to rebuild the ones after it from."""
        return self.tried_whole and self.reached_whole


class KeptAttempts(msgspec.Struct, frozen=True):
    """The file's whole content."""

    format: int
    addresses: bytes  # zlib of the canonical host:port, one a line, in the order first seen
    crawls: list[KeptCrawl]  # oldest first; the first is whole
    rules: list[Rules]


@dataclass(frozen=True)
class FullCrawl:
    """A kept crawl with its bitmaps rebuilt."""

    timestamp: int
    complete: bool
    tried: BitMap
    reached: BitMap
    rules: int


def pack_addresses(addresses: list[str]) -> bytes:
    return zlib.compress("\n".join(addresses).encode(), 6)


def unpack_addresses(packed: bytes) -> list[str]:
    """The address list; ValueError if it is not one."""
    try:
        text = zlib.decompressobj().decompress(packed, MAX_ADDRESSES_BYTES).decode()
    except (zlib.error, UnicodeDecodeError) as exc:
        raise ValueError(f"the address list is unreadable: {exc}") from exc
    return text.split("\n") if text else []


def serialised(bitmap: BitMap) -> bytes:
    bitmap.run_optimize()
    return bytes(bitmap.serialize())


def encode_crawls(crawls: Iterable[FullCrawl]) -> Iterator[KeptCrawl]:
    """Crawls, oldest first, as kept: every KEYFRAME_EVERY-th whole, the others as the
    difference from the crawl before."""
    before: FullCrawl | None = None
    for n, crawl in enumerate(crawls):
        yield next_crawl(crawl, before, whole=n % KEYFRAME_EVERY == 0)
        before = crawl


def next_crawl(crawl: FullCrawl, before: FullCrawl | None, whole: bool) -> KeptCrawl:
    """``crawl`` as kept after ``before``: each bitmap whole or as the difference from
    ``before``'s, whichever is smaller; both whole when ``whole`` or there is none."""
    base = None if whole else before
    tried, tried_whole = _smaller(crawl.tried, base.tried if base is not None else None)
    reached, reached_whole = _smaller(crawl.reached, base.reached if base is not None else None)
    return KeptCrawl(
        crawl.timestamp, crawl.complete, tried, reached, crawl.rules, tried_whole, reached_whole
    )


def _smaller(bitmap: BitMap, before: BitMap | None) -> tuple[bytes, bool]:
    """``bitmap`` serialised whole, or XORed with ``before`` if that is smaller; and
    whether it is whole."""
    as_is = serialised(BitMap(bitmap))
    if before is None:
        return as_is, True
    difference = serialised(bitmap ^ before)
    return (as_is, True) if len(as_is) <= len(difference) else (difference, False)


def decode_crawls(crawls: Iterable[KeptCrawl]) -> Iterator[FullCrawl]:
    """The kept crawls, oldest first, with their bitmaps rebuilt."""
    before: FullCrawl | None = None
    for kept in crawls:
        tried, reached = BitMap.deserialize(kept.tried), BitMap.deserialize(kept.reached)
        if not kept.whole:
            if before is None:
                raise ValueError("the first crawl kept is not whole")
            tried = tried if kept.tried_whole else tried ^ before.tried
            reached = reached if kept.reached_whole else reached ^ before.reached
        before = FullCrawl(kept.timestamp, kept.complete, tried, reached, kept.rules)
        yield before


@dataclass(frozen=True)
class CrawlAttempts:
    """One crawl's attempts, as the serve side uses them."""

    timestamp: int
    complete: bool
    tried: frozenset[str]
    reached: frozenset[str]
    rules: Rules

    def excluded_by(self, address: str) -> str | None:
        """The rule in force that excludes a canonical ``address``, named for an operator
        (``exclude-nodes``, or the network as ``10.0.0.0/8``), or None."""
        host = address.rpartition(":")[0].strip("[]")
        if host in self.rules.exclude_nodes:
            return "exclude-nodes"
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return None  # onion, i2p: no network rule applies
        value = int(ip)
        if ip.version == 4:  # a file of an earlier version may hold what is no range
            for network, mask in self.rules.exclude_ipv4_networks:
                if value & mask == network and (prefix := _prefix(network, mask, 32)) is not None:
                    return str(ipaddress.IPv4Network((network, prefix)))
            return None
        for high, low, prefix in self.rules.exclude_ipv6_networks:
            network = high << 64 | low
            if 0 <= prefix <= 128 and value >> (128 - prefix) == network >> (128 - prefix):
                return str(ipaddress.ip_network((network, prefix), strict=False))
        return None


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(KeptAttempts)


def encode_attempts(kept: KeptAttempts) -> bytes:
    return _encoder.encode(kept)


def decode_attempts(data: bytes) -> KeptAttempts:
    """The file's bytes decoded; ValueError if they are not of this format."""
    try:
        kept = _decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise ValueError(f"not a kept attempts file: {exc}") from exc
    if kept.format != FORMAT:
        raise ValueError(f"attempts format {kept.format}, not {FORMAT}")
    return kept


def write_attempts(folder: Path, kept: KeptAttempts) -> None:
    write_atomically(folder / ATTEMPTS_FILE, encode_attempts(kept))


def read_kept(folder: Path) -> KeptAttempts | None:
    """The whole file, or None if there is none; OSError or ValueError if unusable."""
    try:
        data, _ = read_file(folder / ATTEMPTS_FILE, MAX_ATTEMPTS_BYTES)
    except FileNotFoundError:
        return None
    return decode_attempts(data)


def crawl_attempts(kept: KeptAttempts, not_after: int) -> CrawlAttempts | None:
    """The newest crawl kept not named after ``not_after``, with its addresses.

    Args:
        kept: the file's content.
        not_after: a timestamp (the crawl file's paired with an export, or the export's).

    Returns:
        That crawl's attempts, or None if none is kept. ValueError if the file is broken.
    """
    crawls = kept.crawls
    wanted = max(
        (i for i, crawl in enumerate(crawls) if crawl.timestamp <= not_after),
        key=lambda i: crawls[i].timestamp,
        default=None,
    )
    if wanted is None:
        return None
    start = max((i for i in range(wanted + 1) if crawls[i].whole), default=0)
    *_, crawl = decode_crawls(crawls[start : wanted + 1])
    addresses = unpack_addresses(kept.addresses)

    def named(bitmap: BitMap) -> frozenset[str]:
        return frozenset(addresses[i] for i in bitmap if i < len(addresses))

    rules = kept.rules[crawl.rules] if 0 <= crawl.rules < len(kept.rules) else Rules()
    return CrawlAttempts(
        crawl.timestamp, crawl.complete, named(crawl.tried), named(crawl.reached), rules
    )
