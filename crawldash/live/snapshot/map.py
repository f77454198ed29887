"""The latest crawl's nodes on a map (``/api/map``), prepared in the loader process: nodes
grouped by their coordinates rounded to ``DECIMALS`` places, each group's JSON once, the
answer in every coding, and what a ``match`` on the user agent needs.

A node is mapped when its row places it: not an overlay network (onion, i2p and cjdns
have no place; bitnodes writes them at 0.0, 0.0), with finite coordinates in range, and
not at 0.0, 0.0 without a country (how bitnodes' export writes an unknown location).
Every other node is counted in ``not_mapped`` by its reason, never dropped.

A ``match`` (the user agents that hold a text, in any case, as ``/api/history``'s) is
answered from a tally made here: the crawl's distinct user agents, and for each the groups
of its nodes. A request then reads only the agents that match and their nodes, and its
answer is kept, a bounded number per crawl.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import compress, count, groupby
from operator import attrgetter, itemgetter

import msgspec

from ...models import NodeRow
from ..bodies import Codings, Representation, encoded, made_or_identity, represent

DECIMALS = 1  # 0.1 degree: about 11 km, finer than a world map shows and coarser than GeoIP
OVERLAYS = ("onion", "i2p", "cjdns")
NOT_MAPPED = (*OVERLAYS, "no_coordinates", "unknown_location")
MAX_MATCHES_KEPT = 32  # answers with a match kept per crawl; past that the cache starts again
_encoder = msgspec.json.Encoder()
_latitude, _longitude = attrgetter("latitude"), attrgetter("longitude")
_country, _city, _agent = attrgetter("country"), attrgetter("city"), attrgetter("user_agent")
_count_of = itemgetter(1)


class MapGroup(msgspec.Struct, frozen=True, omit_defaults=True):
    """The nodes at one rounded place: how many, by network, the most common country and
    city among them, and (with a match) how many run a matching user agent."""

    latitude: float
    longitude: float
    nodes: int
    ipv4: int
    ipv6: int
    country: str | None
    place: str | None
    matched: int | None = None


class NotMapped(msgspec.Struct, frozen=True):
    """The nodes not on the map, by why: their network has no place, their row has no
    usable coordinates (missing, out of range), or it is at 0.0, 0.0 with no country."""

    onion: int
    i2p: int
    cjdns: int
    no_coordinates: int
    unknown_location: int


class MapBody(msgspec.Struct, frozen=True, omit_defaults=True):
    """``/api/map``: the groups, most nodes first; ``countries`` counts every node with a
    country (as ``/api/breakdown?by=country`` does), for shading by share."""

    timestamp: int
    total_nodes: int
    mapped: int
    not_mapped: int
    not_mapped_by: NotMapped
    countries: dict[str, int]
    groups: list[MapGroup]
    match: str | None = None  # the text asked for, as given
    matched: int | None = None  # mapped nodes whose user agent holds it


@dataclass(frozen=True)
class PreparedMap:
    """One crawl's map: the answer without a match, and what an answer with one needs."""

    head: bytes  # the object's fields before ``groups``, without the closing brace
    groups: list[bytes]  # each group's JSON, in the answer's order
    agents: list[str]  # the distinct user agents of mapped nodes, lowercased
    agent_groups: list[array[int]]  # per agent: the group of each of its nodes
    modified: float
    default: Codings  # the answer without a match, by coding (compressed ones may follow)
    _matched: dict[str, dict[str, Representation]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def body(self, match: str | None, coding: str, identity_ok: bool = False) -> Representation:
        """The answer, with each group's ``matched`` count when ``match`` is given; such an
        answer is compressed in the codings asked for only. Without a match, in identity
        where ``coding`` is not made yet (a new crawl's follow it) and the client takes
        identity (``identity_ok``), else in ``coding``, made now if need be."""
        if match is None:
            return made_or_identity(self.default, coding, identity_ok) or self.default[coding]
        found = self._matched.get(match)
        if found is None:
            if len(self._matched) >= MAX_MATCHES_KEPT:
                self._matched.clear()
            identity = represent(self._join(match), self.modified)
            found = self._matched[match] = {"identity": identity}
        body = found.get(coding)
        if body is None:
            body = found[coding] = encoded(found["identity"], coding)
        return body

    def _join(self, match: str | None) -> bytes:
        if match is None:
            return _joined(self.head, self.groups)
        lowered, counts = match.lower(), Counter[int]()
        for agent, at in zip(self.agents, self.agent_groups, strict=True):
            if lowered in agent:
                counts.update(at)
        groups = [b'%s,"matched":%d}' % (g[:-1], counts[i]) for i, g in enumerate(self.groups)]
        extra = _encoder.encode({"match": match, "matched": sum(counts.values())})
        return _joined(self.head + b"," + extra[1:-1], groups)


def _joined(head: bytes, groups: list[bytes]) -> bytes:
    return head + b',"groups":[' + b",".join(groups) + b"]}"


def prepare_map(
    timestamp: int, nodes: Mapping[str, NodeRow], networks: Mapping[str, str], modified: float
) -> PreparedMap:
    """The map of a crawl; the loader process runs it. Its passes are by column, in C
    where they can be (``Counter`` over ``zip``), each place worked out once per distinct
    pair of coordinates: a new crawl's map is on the way to its being served.

    Args:
        timestamp: the crawl's.
        nodes: its nodes by canonical address.
        networks: each address's network (``crawl.breakdown.networks_of``).
        modified: when the crawl's file was written, for Last-Modified.

    Returns:
        The map, its answer without a match in identity (its codings are made after:
        ``bodies.every_coding``).
    """
    rows = list(nodes.values())
    nets = list(map(networks.__getitem__, nodes))
    countries_of = list(map(_country, rows))
    pairs = list(zip(map(_latitude, rows), map(_longitude, rows), strict=True))
    rounded = {pair: _rounded(*pair) for pair in dict.fromkeys(pairs)}
    spots: list[tuple[float, float] | str] = [
        net if net in OVERLAYS else _placed(rounded[pair], country)
        for net, pair, country in zip(nets, pairs, countries_of, strict=True)
    ]
    placed = [type(spot) is tuple for spot in spots]
    # Each place as a number (``places`` gives its pair back): the counts below hash
    # numbers, not pairs of floats, and each node's pair is hashed once.
    numbers: dict[tuple[float, float], int] = {}
    at: list[int] = list(map(numbers.setdefault, compress(spots, placed), count()))  # type: ignore[arg-type]
    places = dict(zip(numbers.values(), numbers, strict=True))
    sizes = Counter(at)
    ipv6 = Counter(compress(at, [net == "ipv6" for net in compress(nets, placed)]))
    # Most nodes first, then by place: a stable sort by size after one by place.
    order = sorted(places, key=places.__getitem__)
    order.sort(key=sizes.__getitem__, reverse=True)
    position = dict(zip(order, count()))
    countries = _most_common_at(Counter(zip(at, compress(countries_of, placed), strict=True)))
    cities = _most_common_at(Counter(zip(at, compress(map(_city, rows), placed), strict=True)))
    groups = [
        MapGroup(
            *places[number],
            sizes[number],
            sizes[number] - ipv6[number],
            ipv6[number],
            countries.get(number),
            cities.get(number),
        )
        for number in order
    ]
    unplaced = Counter(compress(spots, [not p for p in placed]))
    not_mapped = NotMapped(*(unplaced[reason] for reason in NOT_MAPPED))
    mapped = len(nodes) - sum(unplaced.values())
    counted = Counter(filter(None, countries_of))
    head = MapBody(
        timestamp,
        len(nodes),
        mapped,
        len(nodes) - mapped,
        not_mapped,
        dict(sorted(counted.items(), key=lambda item: (-item[1], item[0]))),
        [],
    )
    encoded_head = _encoder.encode(head).removesuffix(b',"groups":[]}')
    lowered = {agent: (agent or "").lower() for agent in dict.fromkeys(map(_agent, rows))}
    agents_at = _positions_by(
        list(map(lowered.__getitem__, compress(map(_agent, rows), placed))),
        list(map(position.__getitem__, at)),
    )
    agents = sorted(agents_at)
    encoded = list(map(_encoder.encode, groups))
    default = Codings(identity=represent(_joined(encoded_head, encoded), modified))
    return PreparedMap(
        encoded_head, encoded, agents, [agents_at[a] for a in agents], modified, default
    )


def _positions_by(keys: list[str], positions: list[int]) -> dict[str, array[int]]:
    """Per key, the positions given with it, in the order given (passes in C: a stable
    sort of the indexes by key, cut where the key changes)."""
    indexes = sorted(range(len(keys)), key=keys.__getitem__)
    grouped: dict[str, array[int]] = {}
    for key, run in groupby(indexes, key=keys.__getitem__):
        grouped[key] = array("I", map(positions.__getitem__, run))
    return grouped


def _rounded(latitude: float | None, longitude: float | None) -> tuple[float, float] | str:
    """Where a pair of coordinates is on the map, rounded, or why it is not (one of
    NOT_MAPPED: out of range or not finite; ``_placed`` tells an unknown place)."""
    if (
        latitude is None
        or longitude is None
        or not (math.isfinite(latitude) and math.isfinite(longitude))
        or not (-90 <= latitude <= 90 and -180 <= longitude <= 180)
    ):
        return "no_coordinates"
    return round(latitude, DECIMALS) + 0.0, round(longitude, DECIMALS) + 0.0  # no -0.0


def _placed(spot: tuple[float, float] | str, country: str | None) -> tuple[float, float] | str:
    """At 0.0, 0.0 without a country, a row's place is unknown (bitnodes writes so)."""
    if spot == (0.0, 0.0) and not country:
        return "unknown_location"
    return spot


def _most_common_at(counts: Counter[tuple[int, str | None]]) -> dict[int, str]:
    """Per place, its most common value, the first by name on a tie (rows come in a fresh
    order each crawl, and the name must not change with it), from the count of each
    (place, value) pair; places without a value are left out. Passes in C: sorted by value
    from the last, then (stably) by count, the pair that wins a place comes last of its
    place's, and a dict keeps the last value given for a key."""
    pairs = [(pair, nodes) for pair, nodes in counts.items() if pair[1]]
    pairs.sort(key=_value_of, reverse=True)
    pairs.sort(key=_count_of)
    return dict(map(itemgetter(0), pairs))


def _value_of(item: tuple[tuple[int, str | None], int]) -> str:
    return item[0][1] or ""
