"""A seeded, realistic generator of crawler output (bitnodes export form).

A pool of nodes is built once; each crawl lists a drifting subset of it. Churn is shaped
like the real network's: most nodes stay for long runs, Tor nodes come and go about a
hundred times as often, one node leaves for good every few crawls (a new one takes its
place), and the count moves with a daily wave and a bounded random walk, through the Tor
nodes and, by half as much, the others. Over the days a share of the IPv4/IPv6 nodes
upgrade their client (a few in the last crawl), so that shares move as a network's do.
Each node's row is encoded once (twice for one that upgrades), around its height, so that
a crawl is a join of bytes.
"""

from __future__ import annotations

import ipaddress
import math
import random
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import msgspec

from ..crawl.address import NETWORKS, canonical_address
from .world import (
    AGENTS,
    BASE_TIME,
    COUNTRIES,
    IPV6_PREFIXES,
    MAINNET,
    NEAR_A_CITY,
    NETWORK_ORGS,
    NETWORK_WEIGHTS,
    SERVICES,
    UNKNOWN_PLACE,
    UPGRADE_TO,
    UPGRADING,
    Chain,
)

_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
_encoder = msgspec.json.Encoder()
T = TypeVar("T")
_Cities = tuple[tuple[str, float, float], ...]
STEADY_SWAPS, FLAKY_SWAPS = 1 / 2000, 1 / 100  # share of online nodes swapped per crawl
LEAVE_EVERY = 4  # crawls between two nodes leaving for good
ONION = NETWORKS.index("onion")
LAST_MOMENT = 0.02  # of the nodes that upgrade, those that do so in the last crawl
NEVER = 2**62


@dataclass(frozen=True)
class _Node:
    address: str  # canonical host:port
    head: bytes  # the row up to and including the comma before height
    tail: bytes  # the row after height, from its comma to the closing bracket
    lag: int  # blocks behind the tip
    network: int  # its index in NETWORKS
    upgraded: bytes = b""  # its head from ``upgrade_at`` on, if it upgrades
    upgrade_at: int = NEVER

    def head_at(self, timestamp: int) -> bytes:
        return self.upgraded if timestamp >= self.upgrade_at else self.head


@dataclass(frozen=True)
class Crawl:
    """One crawl: its time, its count of unique addresses, and its file on demand."""

    timestamp: int
    reachable: int
    members: tuple[int, ...]  # its nodes, as indexes into ``pool``
    pool: Sequence[_Node]  # every node the generator may list, shared by all its crawls
    _duplicates: tuple[int, ...]  # positions of rows that the file lists a second time
    chain: Chain = MAINNET

    def tip(self) -> int:
        return tip_height(self.timestamp, self.chain)

    def upgraded(self, member: int) -> bool:
        """Whether the member runs its new client in this crawl."""
        return self.timestamp >= self.pool[member].upgrade_at

    def addresses(self) -> list[str]:
        """Its nodes' canonical addresses."""
        pool = self.pool
        return [pool[i].address for i in self.members]

    def address_of(self, member: int) -> str:
        return self.pool[member].address

    def network_of(self, member: int) -> int:
        """A member's network, as its index in NETWORKS."""
        return self.pool[member].network

    def row_of(self, member: int) -> bytes:
        """A member's row in this crawl's file (export form)."""
        node = self.pool[member]
        return node.head_at(self.timestamp) + str(self.tip() - node.lag).encode() + node.tail

    def body(self) -> bytes:
        """The whole file: a JSON array in the bitnodes export form."""
        tip, at = self.tip(), self.timestamp
        heights: dict[int, bytes] = {}
        rows = []
        for node in map(self.pool.__getitem__, self.members):
            height = heights.get(node.lag)
            if height is None:
                height = heights[node.lag] = str(tip - node.lag).encode()
            rows.append(node.head_at(at) + height + node.tail)
        rows.extend(rows[i] for i in self._duplicates)
        return b"[" + b",".join(rows) + b"]"


def tip_height(timestamp: int, chain: Chain = MAINNET) -> int:
    return chain.base_height + (timestamp - BASE_TIME) // 600


def generate_crawls(
    *,
    nodes: int = 15_000,
    crawls: int = 1008,
    interval: int = 600,
    end: int,
    seed: int = 1,
    chain: Chain = MAINNET,
) -> Iterator[Crawl]:
    """Yield ``crawls`` crawls, oldest first, the last one at ``end``, ``interval`` apart,
    of ``chain`` (its port, its heights)."""
    rng = random.Random(seed)
    arrivals = crawls // LEAVE_EVERY
    span = (end - (crawls - 1) * interval, end)
    pool = _build_pool(rng, int(nodes * 1.15) + 1 + arrivals, span, chain)
    order = list(range(len(pool)))
    rng.shuffle(order)
    newcomers = [order.pop() for _ in range(arrivals)]
    flaky = {i for i in order if pool[i].network == ONION}
    online, offline = order[:nodes], order[nodes:]
    steady = _Side([i for i in online if i not in flaky], [i for i in offline if i not in flaky])
    tor = _Side([i for i in online if i in flaky], [i for i in offline if i in flaky])
    walk, steady_base = 0.0, len(steady.online)
    for index in range(crawls):
        timestamp = end - (crawls - 1 - index) * interval
        walk = max(-0.05, min(0.05, walk + rng.gauss(0, 0.004)))
        wave = 0.03 * math.sin(2 * math.pi * timestamp / 86_400)
        target = max(nodes // 2, round(nodes * (1 + wave + walk)))
        if index % LEAVE_EVERY == 0 and newcomers:
            _pop_random(rng, steady.online)  # gone for good
            steady.online.append(newcomers.pop())
        steady.swap(rng, STEADY_SWAPS)
        tor.swap(rng, FLAKY_SWAPS)
        steady_target = round(steady_base * (1 + (wave + walk) / 2))
        short = tor.move_to(rng, target - steady_target)
        steady.move_to(rng, steady_target + short)
        yield _crawl(rng, pool, steady.online + tor.online, timestamp, chain)


@dataclass
class _Side:
    """Nodes of one kind (steady or Tor), online and offline."""

    online: list[int]
    offline: list[int]

    def swap(self, rng: random.Random, share: float) -> None:
        """Some online nodes go offline, as many offline ones come back."""
        swaps = int(len(self.online) * share + rng.random()) if self.offline else 0
        for _ in range(swaps):
            i, j = rng.randrange(len(self.online)), rng.randrange(len(self.offline))
            self.online[i], self.offline[j] = self.offline[j], self.online[i]

    def move_to(self, rng: random.Random, target: int) -> int:
        """Bring the online count towards ``target``; returns how far it fell short."""
        while len(self.online) < target and self.offline:
            self.online.append(_pop_random(rng, self.offline))
        while len(self.online) > max(target, 1):
            self.offline.append(_pop_random(rng, self.online))
        return target - len(self.online)


def _pop_random(rng: random.Random, items: list[int]) -> int:
    index = rng.randrange(len(items))
    items[index], items[-1] = items[-1], items[index]
    return items.pop()


def _crawl(
    rng: random.Random, pool: list[_Node], online: list[int], timestamp: int, chain: Chain
) -> Crawl:
    duplicates = tuple(rng.randrange(len(online)) for _ in range(max(1, len(online) // 500)))
    return Crawl(timestamp, len(online), tuple(online), pool, duplicates, chain)


def _build_pool(rng: random.Random, size: int, span: tuple[int, int], chain: Chain) -> list[_Node]:
    seen: set[str] = set()
    pool: list[_Node] = []
    while len(pool) < size:
        network = _pick(rng, NETWORK_WEIGHTS)
        address = _address(rng, network)
        if address in seen:
            continue
        seen.add(address)
        pool.append(_node(rng, network, address, span, chain))
    return pool


def _node(
    rng: random.Random, network: str, address: str, span: tuple[int, int], chain: Chain
) -> _Node:
    other = rng.choice((chain.port + 10_000, chain.port + 1, rng.randrange(1024, 65536)))
    port = chain.port if rng.random() < 0.93 else other
    end = span[1]
    since = end - int(rng.expovariate(1 / (20 * 86_400))) - 3600
    head = [
        address,
        port,
        70016 if rng.random() < 0.97 else 70015,
        _pick(rng, AGENTS),
        since,
        _pick(rng, SERVICES),
    ]
    if network in ("ipv4", "ipv6"):
        code, cities, zone, orgs = _pick(rng, COUNTRIES)
        asn, org = rng.choice(orgs)
        host = f"static.{address.replace('.', '-')}.example.net" if rng.random() < 0.4 else None
        place = _place(address, code, cities)
        tail: list[object] = [host, *place, zone if place[1] else None, asn, org]
    else:
        label = {"onion": "TOR", "i2p": "I2P", "cjdns": "CJDNS"}[network]
        tail = [None, None, None, 0.0, 0.0, None, label, NETWORK_ORGS[label]]
    lag = 0 if rng.random() < 0.9 else rng.choice((1, 1, 2, 3, rng.randrange(10, 5000)))
    head_bytes, tail_bytes = _encoder.encode(head)[:-1] + b",", b"," + _encoder.encode(tail)[1:]
    key = canonical_address(address, port)
    node = _Node(key, head_bytes, tail_bytes, lag, NETWORKS.index(network))
    # Whether and when it upgrades, from its address alone (the other draws stay as they were).
    draw = random.Random(zlib.crc32(b"upgrade " + address.encode()))
    if network in ("ipv4", "ipv6") and head[3] != UPGRADE_TO and draw.random() < UPGRADING:
        moment = draw.random()
        at = end if moment < LAST_MOMENT else span[0] + int(moment * (end - span[0]))
        after = _encoder.encode([*head[:3], UPGRADE_TO, at, head[5]])[:-1] + b","
        node = _Node(key, head_bytes, tail_bytes, lag, node.network, after, at)
    return node


def _place(address: str, code: str, cities: _Cities) -> list[object]:
    """City, country, latitude and longitude of a located node, from its address alone (so
    that the generator's other draws stay as they were): most at one of the country's
    cities, the first the likeliest, some in a town near one, a few unknown."""
    draw = random.Random(zlib.crc32(address.encode()))
    if draw.random() < UNKNOWN_PLACE:
        return [None, None, 0.0, 0.0]
    city, lat, lon = cities[min(int(draw.expovariate(1.2)), len(cities) - 1)]
    if draw.random() < NEAR_A_CITY:
        lat, lon = round(lat + draw.uniform(-1.5, 1.5), 4), round(lon + draw.uniform(-2, 2), 4)
    return [city, code, lat, lon]


def _pick(rng: random.Random, weighted: tuple[tuple[T, float], ...]) -> T:
    return rng.choices([value for value, _ in weighted], [w for _, w in weighted])[0]


def _address(rng: random.Random, network: str) -> str:
    if network == "ipv4":
        first = rng.choice([n for n in range(1, 224) if n not in (10, 100, 127, 169, 172, 192)])
        return f"{first}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    if network == "ipv6":
        groups = ":".join(f"{rng.randrange(65536):x}" for _ in range(6))
        return ipaddress.IPv6Address(f"{rng.choice(IPV6_PREFIXES)}:{groups}").compressed
    if network == "cjdns":
        groups = ":".join(f"{rng.randrange(65536):x}" for _ in range(7))
        return ipaddress.IPv6Address(f"fc{rng.randrange(256):02x}:{groups}").compressed
    length, suffix = (56, ".onion") if network == "onion" else (52, ".b32.i2p")
    return "".join(rng.choice(_BASE32) for _ in range(length)) + suffix


def status_json(*, end: int, seed: int = 1, chain: Chain = MAINNET) -> bytes:
    """A realistic ``status.json`` for a crawler that finished a crawl at ``end``."""
    rng = random.Random(seed)
    status = {
        "state": "running",
        "queue_size": rng.randrange(0, 5000),
        "height": tip_height(end, chain),
        "last_elapsed": round(rng.uniform(380, 620), 1),
        "updated_at": end,
    }
    return _encoder.encode(status)
