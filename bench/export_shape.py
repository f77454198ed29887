"""Crawl files in a real bitnodes export's shape, for the benchmark.

The demo generator (``crawldash.demo.fake_crawler``) gives the churn: which nodes of a
pool each crawl lists. This module gives each pool node a row with the spread of a real
export, and each crawl its rows in a fresh order:

- bitnodes' ``export.py`` lists ``opendata`` by each node's last-ping time, so consecutive
  crawls list the same nodes in a different order: each crawl here is shuffled anew;
- about half the rows are onion addresses at 0.0, 0.0 (bitnodes' test export: 51.5%);
- user agents, ASNs, countries and hostnames have a long tail (that export: 196 user
  agents, 1,067 ASNs, 98 countries, a hostname on every clearnet row), drawn here from
  rank-frequency weights with the export's head shares. Versions and service bits are
  today's (the test export is from 2022, before v2 transport), so that filters such as
  ``services=P2P_V2`` find what they find on today's network.

docs/benchmarks.md compares the two, with the command that counts them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache

import msgspec

from crawldash.crawl.address import NETWORKS
from crawldash.demo.fake_crawler import generate_crawls, tip_height

ONION, I2P, CJDNS = NETWORKS.index("onion"), NETWORKS.index("i2p"), NETWORKS.index("cjdns")
TO_ONION = 0.32  # of the demo pool's clearnet nodes, made onion: about half in all
ASNS = 1600  # ASNs to draw clearnet nodes from, rank-frequency 1/rank
AGENT_TAIL = 260  # user agents past the head, rank-frequency 1/rank**1.1
_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
# fmt: off
_AGENT_HEAD = (  # the test export's head shares (%), with today's versions
    ("/Satoshi:28.1.0/", 32.6), ("/Satoshi:27.1.0/", 30.8), ("/Satoshi:28.0.0/", 9.3),
    ("/Satoshi:27.0.0/", 4.9), ("/Satoshi:28.1.0(FutureBit-Apollo-Node)/", 4.0),
    ("/Satoshi:26.0.0/", 2.9), ("/Satoshi:25.0.0/", 2.1), ("/Satoshi:24.0.1/", 1.1),
    ("/Satoshi:0.21.1/", 1.0), ("/Satoshi:27.2.0/", 1.0),
)
_COMMENTS = ("", "(Knots:2025{:02d}05)", "(Umbrel)", "(node-{})", "(StartOS)", "(raspiblitz)")
_SERVICES = (  # today's bits: 3081 = NETWORK | WITNESS | NETWORK_LIMITED | P2P_V2
    (3081, 46), (1033, 22), (3085, 8), (1037, 9), (1032, 5), (3080, 3), (1101, 2),
    (67109965, 2), (1036, 1), (12, 1), (1097, 1),
)
_COUNTRIES = (  # (code, timezone, latitude, longitude), the test export's clearnet shares (%)
    (("US", "America/New_York", 39.04, -77.49), 27), (("DE", "Europe/Berlin", 50.48, 12.37), 20),
    (("FR", "Europe/Paris", 50.69, 3.17), 6.3), (("NL", "Europe/Amsterdam", 52.37, 4.9), 5.5),
    (("CA", "America/Toronto", 43.65, -79.38), 4.4), (("FI", "Europe/Helsinki", 60.17, 24.94), 3.5),
    (("GB", "Europe/London", 51.51, -0.13), 3.0), (("RU", "Europe/Moscow", 59.9, 30.26), 2.7),
    (("SG", "Asia/Singapore", 1.35, 103.82), 2.1),
    (("AU", "Australia/Sydney", -33.87, 151.21), 1.8),
    (("CH", "Europe/Zurich", 47.38, 8.54), 1.8), (("JP", "Asia/Tokyo", 35.68, 139.65), 1.5),
)
_MORE_COUNTRIES = (  # the tail: 85 more, sharing the rest
    "SE", "ES", "IT", "PL", "CZ", "AT", "BE", "NO", "DK", "IE", "PT", "BR", "AR", "MX", "CL", "CO",
    "UA", "RO", "BG", "HU", "SK", "SI", "HR", "RS", "GR", "TR", "IL", "AE", "SA", "IN", "CN", "HK",
    "TW", "KR", "TH", "VN", "MY", "ID", "PH", "NZ", "ZA", "NG", "KE", "EG", "MA", "TN", "LT", "LV",
    "EE", "IS", "LU", "MT", "CY", "GE", "AM", "KZ", "BY", "MD", "BA", "MK", "AL", "ME", "PE", "VE",
    "EC", "UY", "PY", "BO", "CR", "PA", "GT", "DO", "PR", "JM", "TT", "BD", "PK", "LK", "NP", "IR",
    "IQ", "JO", "LB", "QA", "KW",
)
_HOSTS = ("{dashed}.static.as{asn}.net", "ip-{dashed}.{region}.compute.as{asn}.cloud",
          "{dashed}.dyn.isp{asn}.example", "host-{dashed}.res.as{asn}.com", "{address}")
# fmt: on
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class Node:
    """One pool node's row around its height, which each crawl fills in."""

    head: bytes  # the row up to and including the comma before height
    tail: bytes  # from the comma after height to the closing bracket
    lag: int  # blocks behind the tip


@dataclass(frozen=True)
class ShapedCrawl:
    """One crawl: its time, its nodes (indexes into ``pool``), its file on demand."""

    timestamp: int
    members: tuple[int, ...]
    pool: Sequence[Node]
    seed: int

    @property
    def reachable(self) -> int:
        return len(self.members)

    def order(self) -> list[int]:
        """Its nodes in the order its file lists them: fresh for each crawl."""
        order = list(self.members)
        random.Random(self.seed * 1_000_003 + self.timestamp).shuffle(order)
        return order

    def body(self) -> bytes:
        """The whole file: a JSON array in the bitnodes export form."""
        tip = tip_height(self.timestamp)
        pool, heights = self.pool, dict[int, bytes]()
        rows = []
        for node in map(pool.__getitem__, self.order()):
            height = heights.get(node.lag) or heights.setdefault(node.lag, b"%d" % (tip - node.lag))
            rows.append(node.head + height + node.tail)
        return b"[" + b",".join(rows) + b"]"


def shaped_crawls(*, nodes: int, crawls: int, end: int, seed: int) -> Iterator[ShapedCrawl]:
    """``crawls`` crawls, oldest first, the last at ``end``, 600 s apart, with the demo
    generator's churn over a pool of nodes shaped like a real export's."""
    pool: list[Node] = []
    for crawl in generate_crawls(nodes=nodes, crawls=crawls, end=end, seed=seed):
        if not pool:
            rng = random.Random(seed)
            pool = [shaped_node(rng, crawl.network_of(i), end) for i in range(len(crawl.pool))]
        yield ShapedCrawl(crawl.timestamp, crawl.members, pool, seed)


def shaped_node(rng: random.Random, network: int, end: int) -> Node:
    """A node of ``network`` (the demo pool's; a share of clearnet ones made onion)."""
    if network not in (ONION, I2P, CJDNS) and rng.random() < TO_ONION:
        network = ONION
    name = NETWORKS[network]
    address = _address(rng, name)
    port = 8333 if rng.random() < 0.978 else rng.choice((8332, 48333, 8335, 18333, 8444))
    version = 70016 if rng.random() < 0.9 else rng.choice((70015,) * 9 + (70012, 70014, 70013))
    since = end - int(rng.expovariate(1 / (20 * 86_400))) - 3600
    services = rng.choices(*zip(*_SERVICES, strict=True))[0]
    head = [address, port, version, _agent(rng), since, services]
    if name in ("ipv4", "ipv6"):
        tail = _clearnet(rng, address, _rank(rng, ASNS, 1.0))
    else:
        label = {"onion": "TOR", "i2p": "I2P", "cjdns": "CJDNS"}[name]
        tail = [None, None, None, 0.0, 0.0, None, label, f"{label.title()} network"]
    lag = 0 if rng.random() < 0.976 else rng.choice((1, 1, 2, 3, 6, rng.randrange(10, 5000)))
    return Node(_encoder.encode(head)[:-1] + b",", b"," + _encoder.encode(tail)[1:], lag)


def _clearnet(rng: random.Random, address: str, asn_rank: int) -> list[object]:
    code, zone, lat, lon, asn = _asn(asn_rank)
    template = rng.choices(_HOSTS, (30, 20, 20, 20, 10))[0]
    dashed = address.replace(".", "-").replace(":", "-")
    host = template.format(
        dashed=dashed, asn=asn, region=f"{code.lower()}-{asn % 4}", address=address
    )
    city = f"{code}-City-{rng.randrange(1 + 40 // asn_rank)}"
    place = round(lat + rng.uniform(-2, 2), 4), round(lon + rng.uniform(-2, 2), 4)
    return [host, city, code, *place, zone, f"AS{asn}", f"Provider {asn} Networks Ltd"]


@cache
def _asn(rank: int) -> tuple[str, str, float, float, int]:
    """The ASN of a rank: its number and its country (the first few are the export's
    largest: a German, two American and a French hoster)."""
    rng = random.Random(rank)
    fixed = {1: "DE", 2: "US", 3: "US", 4: "FR"}
    weights = [w for _, w in _COUNTRIES] + [0.25] * len(_MORE_COUNTRIES)
    places = [place for place, _ in _COUNTRIES] + [
        (code, "Etc/UTC", rng.uniform(-40, 60), rng.uniform(-120, 140)) for code in _MORE_COUNTRIES
    ]
    if rank in fixed:
        code, zone, lat, lon = next(p for p in places if p[0] == fixed[rank])
    else:
        code, zone, lat, lon = rng.choices(places, weights)[0]
    return code, zone, lat, lon, 1000 + rank * 37 % 60000


def _agent(rng: random.Random) -> str:
    if rng.random() < sum(w for _, w in _AGENT_HEAD) / 100:
        return str(rng.choices(*zip(*_AGENT_HEAD, strict=True))[0])
    return _tail_agent(_rank(rng, AGENT_TAIL, 1.1))


@cache
def _tail_agent(rank: int) -> str:
    """The user agent of a rank past the head: one of its own."""
    if rank % 9 == 0:
        return f"/btcd:0.{20 + rank // 9 % 5}.{rank // 45}/"
    rng = random.Random(-rank)
    comment = rng.choice(_COMMENTS).format(rank % 12 + 1)
    return f"/Satoshi:{rng.choice((22, 23, 24, 25, 26, 29))}.{rank % 3}.{rank // 3}{comment}/"


@cache
def _weights(count: int, power: float) -> list[float]:
    return [1 / rank**power for rank in range(1, count + 1)]


def _rank(rng: random.Random, count: int, power: float) -> int:
    """A rank from 1 to ``count``, drawn with weight 1/rank**power."""
    return rng.choices(range(1, count + 1), cum_weights=_cumulative(count, power))[0]


@cache
def _cumulative(count: int, power: float) -> list[float]:
    total, sums = 0.0, []
    for weight in _weights(count, power):
        total += weight
        sums.append(total)
    return sums


def _address(rng: random.Random, network: str) -> str:
    if network == "ipv4":
        first = rng.choice([n for n in range(1, 224) if n not in (10, 100, 127, 169, 172, 192)])
        return f"{first}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    if network in ("ipv6", "cjdns"):
        cjdns = network == "cjdns"
        start = "fc00" if cjdns else rng.choice(("2a01:4f8", "2001:41d0", "2600:1f18"))
        groups = ":".join(f"{rng.randrange(1, 65536):x}" for _ in range(7 if cjdns else 6))
        return f"{start}:{groups}"
    length, suffix = (56, ".onion") if network == "onion" else (52, ".b32.i2p")
    return "".join(rng.choice(_BASE32) for _ in range(length)) + suffix
