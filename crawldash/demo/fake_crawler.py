"""A seeded, realistic generator of crawler output (bitnodes export form).

A pool of nodes is built once; each crawl lists a drifting subset of it. Churn is shaped
like the real network's: most nodes stay for long runs, Tor nodes come and go about a
hundred times as often, one node leaves for good every few crawls (a new one takes its
place), and the count moves with a daily wave and a bounded random walk, mostly through
the Tor nodes. Each node's row is encoded once, around its height, so that a crawl is a
join of bytes.
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

BASE_TIME, BASE_HEIGHT = 1_790_000_000, 925_000  # the chain tip advances 1 block per 600 s
_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
_NETWORKS = (("ipv4", 55.0), ("ipv6", 15.0), ("onion", 27.7), ("i2p", 2.0), ("cjdns", 0.3))
# fmt: off
_AGENTS = (
    ("/Satoshi:28.0.0/", 22), ("/Satoshi:27.1.0/", 20), ("/Satoshi:27.0.0/", 12),
    ("/Satoshi:26.0.0/", 9), ("/Satoshi:25.1.0/", 7), ("/Satoshi:24.0.1/", 6),
    ("/Satoshi:0.21.1/", 4), ("/Satoshi:28.1.0/", 6), ("/Satoshi:27.1.0(Knots:20240801)/", 6),
    ("/Satoshi:0.20.1/", 2), ("/btcd:0.24.2/", 2), ("/Satoshi:23.0.0/", 4),
)
_SERVICES = ((1033, 50), (3081, 20), (1037, 15), (3077, 10), (1097, 5))
_COUNTRIES = (  # (code, ((city, latitude, longitude), ...), timezone, ((asn, org), ...)), weight
    (("US", (("Ashburn", 39.0438, -77.4874), ("New York", 40.7128, -74.006),
             ("Dallas", 32.7767, -96.797), ("San Jose", 37.3382, -121.8863),
             ("Chicago", 41.8781, -87.6298), ("Seattle", 47.6062, -122.3321),
             ("Miami", 25.7617, -80.1918), ("Denver", 39.7392, -104.9903)),
      "America/New_York", (("AS14618", "Amazon.com, Inc."), ("AS7922", "Comcast Cable"))), 28),
    (("DE", (("Falkenstein", 50.4779, 12.3713), ("Nuremberg", 49.4521, 11.0767),
             ("Frankfurt am Main", 50.1109, 8.6821), ("Berlin", 52.52, 13.405),
             ("Munich", 48.1351, 11.582), ("Hamburg", 53.5511, 9.9937)),
      "Europe/Berlin", (("AS24940", "Hetzner Online GmbH"), ("AS3320", "Deutsche Telekom AG"))),
     16),
    (("FR", (("Roubaix", 50.6942, 3.1746), ("Paris", 48.8566, 2.3522), ("Lyon", 45.764, 4.8357),
             ("Gravelines", 50.9871, 2.1255)), "Europe/Paris", (("AS16276", "OVH SAS"),)), 7),
    (("NL", (("Amsterdam", 52.3676, 4.9041), ("Rotterdam", 51.9244, 4.4777),
             ("Utrecht", 52.0907, 5.1214)),
      "Europe/Amsterdam", (("AS60781", "LeaseWeb Netherlands B.V."),)), 6),
    (("CA", (("Toronto", 43.6532, -79.3832), ("Montreal", 45.5019, -73.5674),
             ("Vancouver", 49.2827, -123.1207)), "America/Toronto", (("AS812", "Rogers"),)), 5),
    (("GB", (("London", 51.5072, -0.1276), ("Manchester", 53.4808, -2.2426),
             ("Edinburgh", 55.9533, -3.1883)), "Europe/London", (("AS2856", "British Telecom"),)),
     4),
    (("FI", (("Helsinki", 60.1699, 24.9384), ("Tuusula", 60.4036, 25.0291)),
      "Europe/Helsinki", (("AS24940", "Hetzner Online GmbH"),)), 4),
    (("JP", (("Tokyo", 35.6762, 139.6503), ("Osaka", 34.6937, 135.5023)),
      "Asia/Tokyo", (("AS2516", "KDDI Corporation"),)), 3),
    (("SG", (("Singapore", 1.3521, 103.8198),),
      "Asia/Singapore", (("AS14061", "DigitalOcean, LLC"),)), 3),
    (("CH", (("Zurich", 47.3769, 8.5417), ("Geneva", 46.2044, 6.1432)),
      "Europe/Zurich", (("AS3303", "Swisscom"),)), 3),
    (("RU", (("St Petersburg", 59.8983, 30.2618), ("Moscow", 55.7558, 37.6173),
             ("Novosibirsk", 55.0084, 82.9357)), "Europe/Moscow", (("AS12389", "Rostelecom"),)), 3),
    (("AU", (("Sydney", -33.8688, 151.2093), ("Melbourne", -37.8136, 144.9631)),
      "Australia/Sydney", (("AS1221", "Telstra"),)), 2),
    (("BR", (("Sao Paulo", -23.5505, -46.6333), ("Rio de Janeiro", -22.9068, -43.1729)),
      "America/Sao_Paulo", (("AS28573", "Claro"),)), 2),
    (("SE", (("Stockholm", 59.3293, 18.0686), ("Gothenburg", 57.7089, 11.9746)),
      "Europe/Stockholm", (("AS3301", "Telia"),)), 2),
    (("ES", (("Madrid", 40.4168, -3.7038), ("Barcelona", 41.3874, 2.1686)),
      "Europe/Madrid", (("AS3352", "Telefonica"),)), 2),
    (("IT", (("Milan", 45.4642, 9.19), ("Rome", 41.9028, 12.4964)),
      "Europe/Rome", (("AS3269", "Telecom Italia"),)), 2),
    (("PL", (("Warsaw", 52.2297, 21.0122), ("Krakow", 50.0647, 19.945)),
      "Europe/Warsaw", (("AS5617", "Orange Polska"),)), 2),
    (("CZ", (("Prague", 50.0755, 14.4378),), "Europe/Prague", (("AS5610", "O2 Czech"),)), 1),
    (("ZA", (("Johannesburg", -26.2041, 28.0473), ("Cape Town", -33.9249, 18.4241)),
      "Africa/Johannesburg", (("AS37100", "SEACOM"),)), 1),
    (("AR", (("Buenos Aires", -34.6037, -58.3816),),
      "America/Argentina/Buenos_Aires", (("AS7303", "Telecom Argentina"),)), 1),
    (("IN", (("Mumbai", 19.076, 72.8777), ("Bangalore", 12.9716, 77.5946)),
      "Asia/Kolkata", (("AS9829", "BSNL"),)), 1),
)
UNKNOWN_PLACE = 0.03  # located rows whose GeoIP lookup failed: 0.0, 0.0 and no country
NEAR_A_CITY = 0.3  # rows placed in a town near a city, not at the city itself
# fmt: on
_IPV6_PREFIXES = ("2a01:4f8", "2a01:4f9", "2001:41d0", "2600:1f18", "2a03:b0c0", "2604:a880")
_NETWORK_ORGS = {"TOR": "Tor network", "I2P": "I2P network", "CJDNS": "CJDNS network"}
_encoder = msgspec.json.Encoder()
T = TypeVar("T")
_Cities = tuple[tuple[str, float, float], ...]
STEADY_SWAPS, FLAKY_SWAPS = 1 / 2000, 1 / 100  # share of online nodes swapped per crawl
LEAVE_EVERY = 4  # crawls between two nodes leaving for good
ONION = NETWORKS.index("onion")


@dataclass(frozen=True)
class _Node:
    address: str  # canonical host:port
    head: bytes  # the row up to and including the comma before height
    tail: bytes  # the row after height, from its comma to the closing bracket
    lag: int  # blocks behind the tip
    network: int  # its index in NETWORKS


@dataclass(frozen=True)
class Crawl:
    """One crawl: its time, its count of unique addresses, and its file on demand."""

    timestamp: int
    reachable: int
    members: tuple[int, ...]  # its nodes, as indexes into ``pool``
    pool: Sequence[_Node]  # every node the generator may list, shared by all its crawls
    _duplicates: tuple[int, ...]  # positions of rows that the file lists a second time

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
        return node.head + str(tip_height(self.timestamp) - node.lag).encode() + node.tail

    def body(self) -> bytes:
        """The whole file: a JSON array in the bitnodes export form."""
        tip = tip_height(self.timestamp)
        heights: dict[int, bytes] = {}
        rows = []
        for node in map(self.pool.__getitem__, self.members):
            height = heights.get(node.lag)
            if height is None:
                height = heights[node.lag] = str(tip - node.lag).encode()
            rows.append(node.head + height + node.tail)
        rows.extend(rows[i] for i in self._duplicates)
        return b"[" + b",".join(rows) + b"]"


def tip_height(timestamp: int) -> int:
    return BASE_HEIGHT + (timestamp - BASE_TIME) // 600


def generate_crawls(
    *, nodes: int = 15_000, crawls: int = 1008, interval: int = 600, end: int, seed: int = 1
) -> Iterator[Crawl]:
    """Yield ``crawls`` crawls, oldest first, the last one at ``end``, ``interval`` apart."""
    rng = random.Random(seed)
    arrivals = crawls // LEAVE_EVERY
    pool = _build_pool(rng, int(nodes * 1.15) + 1 + arrivals, end)
    order = list(range(len(pool)))
    rng.shuffle(order)
    newcomers = [order.pop() for _ in range(arrivals)]
    flaky = {i for i in order if pool[i].network == ONION}
    online, offline = order[:nodes], order[nodes:]
    steady = _Side([i for i in online if i not in flaky], [i for i in offline if i not in flaky])
    tor = _Side([i for i in online if i in flaky], [i for i in offline if i in flaky])
    walk = 0.0
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
        short = tor.move_to(rng, target - len(steady.online))
        steady.move_to(rng, len(steady.online) + short)
        yield _crawl(rng, pool, steady.online + tor.online, timestamp)


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


def _crawl(rng: random.Random, pool: list[_Node], online: list[int], timestamp: int) -> Crawl:
    duplicates = tuple(rng.randrange(len(online)) for _ in range(max(1, len(online) // 500)))
    return Crawl(timestamp, len(online), tuple(online), pool, duplicates)


def _build_pool(rng: random.Random, size: int, end: int) -> list[_Node]:
    seen: set[str] = set()
    pool: list[_Node] = []
    while len(pool) < size:
        network = _pick(rng, _NETWORKS)
        address = _address(rng, network)
        if address in seen:
            continue
        seen.add(address)
        pool.append(_node(rng, network, address, end))
    return pool


def _node(rng: random.Random, network: str, address: str, end: int) -> _Node:
    port = 8333 if rng.random() < 0.93 else rng.choice((18333, 8334, rng.randrange(1024, 65536)))
    since = end - int(rng.expovariate(1 / (20 * 86_400))) - 3600
    head = [
        address,
        port,
        70016 if rng.random() < 0.97 else 70015,
        _pick(rng, _AGENTS),
        since,
        _pick(rng, _SERVICES),
    ]
    if network in ("ipv4", "ipv6"):
        code, cities, zone, orgs = _pick(rng, _COUNTRIES)
        asn, org = rng.choice(orgs)
        host = f"static.{address.replace('.', '-')}.example.net" if rng.random() < 0.4 else None
        place = _place(address, code, cities)
        tail: list[object] = [host, *place, zone if place[1] else None, asn, org]
    else:
        label = {"onion": "TOR", "i2p": "I2P", "cjdns": "CJDNS"}[network]
        tail = [None, None, None, 0.0, 0.0, None, label, _NETWORK_ORGS[label]]
    lag = 0 if rng.random() < 0.9 else rng.choice((1, 1, 2, 3, rng.randrange(10, 5000)))
    head_bytes, tail_bytes = _encoder.encode(head)[:-1] + b",", b"," + _encoder.encode(tail)[1:]
    key = canonical_address(address, port)
    return _Node(key, head_bytes, tail_bytes, lag, NETWORKS.index(network))


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
        return ipaddress.IPv6Address(f"{rng.choice(_IPV6_PREFIXES)}:{groups}").compressed
    if network == "cjdns":
        groups = ":".join(f"{rng.randrange(65536):x}" for _ in range(7))
        return ipaddress.IPv6Address(f"fc{rng.randrange(256):02x}:{groups}").compressed
    length, suffix = (56, ".onion") if network == "onion" else (52, ".b32.i2p")
    return "".join(rng.choice(_BASE32) for _ in range(length)) + suffix


def status_json(*, end: int, seed: int = 1) -> bytes:
    """A realistic ``status.json`` for a crawler that finished a crawl at ``end``."""
    rng = random.Random(seed)
    status = {
        "state": "running",
        "queue_size": rng.randrange(0, 5000),
        "height": tip_height(end),
        "last_elapsed": round(rng.uniform(380, 620), 1),
        "updated_at": end,
    }
    return _encoder.encode(status)
