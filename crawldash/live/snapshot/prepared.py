"""What the loader process makes of a crawl: every body of the snapshot, each node's JSON.

Everything in a PreparedSnapshot is bytes or numbers, so it crosses from the loader process
cheaply (no per-node objects to rebuild on the serving side).

Every answer of a crawl is ready long before the compressed codings of its bodies: a load
hands the crawl ``ahead`` without them, so that it is served, every answer at once, while
they are made; they follow (``Later``), and meanwhile each is made on request.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import msgspec

from ...crawl.decode import Rules, Snapshot, decode_snapshot
from ...crawl.files import FileVersion, read_file, snapshot_timestamp
from ...crawl.spellings import Spellings
from ...models import ApiSnapshot, NodeRow
from ..bodies import CODINGS, Representation
from .breakdown import PreparedBreakdown
from .catalog import NodeCatalog
from .csv_records import CsvRecords
from .map import PreparedMap

_encoder = msgspec.json.Encoder()
_row = msgspec.json.Decoder(NodeRow)


class NodeJson(Mapping[str, bytes]):
    """Each node's JSON object by canonical address, as ``/api/check`` shows it. Packed:
    the sorted addresses (shared with the catalog), and where each node's row (the
    13-field array of API v1) is in the snapshot's body, which holds it verbatim: the rows
    cross from the loader process inside the body, and no node has an object of its own
    until asked for. A lookup is a binary search."""

    def __init__(
        self,
        addresses: list[str],
        blob: bytes,
        starts: array[int],
        ends: array[int],
        places: array[int],
    ) -> None:
        self.addresses, self.blob, self.places = addresses, blob, places
        self.starts, self.ends = starts, ends

    @classmethod
    def within(cls, addresses: list[str], body: SnapshotBody, order: list[int]) -> NodeJson:
        """Each node's row where ``body`` holds it, for the catalog's ``addresses``:
        ``order`` is the crawl's positions by address (``catalog.by_address``), which
        those are."""
        return cls(addresses, body.body, body.starts, body.ends, array("I", order))

    def row(self, position: int) -> bytes:
        """The node's row, as API v1 lists it."""
        place = self.places[position]
        return self.blob[self.starts[place] : self.ends[place]]

    def at(self, position: int) -> bytes:
        return _encoder.encode(_row.decode(self.row(position)).named())

    def __getitem__(self, address: str) -> bytes:
        position = bisect_left(self.addresses, address)
        if position == len(self.addresses) or self.addresses[position] != address:
            raise KeyError(address)
        return self.at(position)

    def __iter__(self) -> Iterator[str]:
        return iter(self.addresses)

    def __len__(self) -> int:
        return len(self.addresses)

    def __reduce__(self) -> tuple[type[NodeJson], tuple[Any, ...]]:
        return NodeJson, (self.addresses, self.blob, self.starts, self.ends, self.places)


@dataclass(frozen=True)
class SnapshotBody:
    """``/api/snapshot``'s body, and where each node's row is in it, in the crawl's order:
    ``body[starts[i]:ends[i]]`` is the row of ``addresses[i]``."""

    body: bytes
    addresses: list[str]
    starts: array[int]
    ends: array[int]

    @classmethod
    def of(cls, snapshot: Snapshot) -> SnapshotBody:
        """The bytes msgspec encodes an ``ApiSnapshot`` of the crawl to, made a member at a
        time into one buffer, each row encoded into it in place, so that where each row is
        is known. A canonical address needs no escaping in JSON (digits, a-z, ``.``,
        ``:``, ``[`` and ``]``)."""
        head = _encoder.encode(
            ApiSnapshot(snapshot.timestamp, len(snapshot.nodes), snapshot.latest_height, {})
        )
        body = bytearray(head[: -len(b"}}")])
        starts, ends = array("I"), array("I")
        encode_into, started, ended = _encoder.encode_into, starts.append, ends.append
        for address, node in snapshot.nodes.items():
            body += b'"%s":' % address.encode()
            started(len(body))
            encode_into(node, body, -1)
            ended(len(body))
            body += b","
        if snapshot.nodes:
            del body[-1:]
        body += b"}}"
        return cls(bytes(body), list(snapshot.nodes), starts, ends)


@dataclass(frozen=True)
class Later:
    """What follows a crawl served from its part sent ahead (``PreparedSnapshot.in_two``):
    the compressed codings of its snapshot, breakdowns and map, and its CSV records, which
    the server adds to the crawl it serves. Until they come, each coding is made on request
    (``Codings``), and a CSV waits for them."""

    timestamp: int
    version: FileVersion  # of the file as it was read: which crawl served they are for
    snapshot: dict[str, Representation]  # the snapshot's codings but identity
    breakdowns: dict[str, dict[str, Representation]]  # each default answer's, by key
    map: dict[str, Representation]  # the map's answer without a match
    csv: CsvRecords  # every node's CSV record, for /api/nodes?format=csv

    def add_to(self, served: PreparedSnapshot) -> bool:
        """Add these codings to ``served`` if they are its crawl's (the same file version).

        Returns:
            Whether they were.
        """
        if (served.timestamp, served.version) != (self.timestamp, self.version):
            return False
        served.representations.update(self.snapshot)
        for by, codings in self.breakdowns.items():
            served.breakdowns[by].default.update(codings)
        served.map.default.update(self.map)
        served.catalog.records.take(self.csv)
        return True


Ahead = Callable[[object], object]  # hands a crawl served (or a Half of it) on, before Later


@dataclass(frozen=True)
class PreparedSnapshot:
    """The latest snapshot, its response in every encoding, and its nodes by address. It
    is served whole from one moment: every answer of the crawl is in it but the compressed
    codings of its bodies, which may follow (``Later``); until then its ``representations``
    hold identity alone, and the breakdowns' and the map's codings are made on request."""

    timestamp: int
    total_nodes: int
    latest_height: int
    skipped_rows: int  # rows of the file whose address was unusable
    representations: dict[str, Representation]  # by content coding: identity, gzip, br
    nodes: NodeJson  # each node's JSON as /api/check shows it, by canonical address
    networks: tuple[int, ...]  # node counts by network, in NETWORKS order
    breakdowns: dict[str, PreparedBreakdown]  # by key: network, country, asn, ...
    catalog: NodeCatalog  # the nodes as columns, for /api/nodes
    version: FileVersion  # of the file as it was read
    map: PreparedMap  # the nodes grouped by place, for /api/map

    @property
    def identity(self) -> Representation:
        return self.representations["identity"]

    def whole(self) -> bool:
        """Whether what follows the crawl (``Later``) is in."""
        return self.catalog.records.made and all(c in self.representations for c in CODINGS)

    def rows(self) -> dict[str, NodeRow]:
        """Each node's row by address, decoded again from what is served (slow)."""
        return {a: _row.decode(self.nodes.row(i)) for i, a in enumerate(self.nodes.addresses)}

    @classmethod
    def prepare(cls, snapshot: Snapshot, version: FileVersion) -> PreparedSnapshot:
        """Every answer of a crawl, in every coding, made here whole; slow for a large
        snapshot: run it off the loop.

        Args:
            snapshot: the decoded crawl.
            version: of the file it was read from.

        Returns:
            Every answer of the crawl.
        """
        from .making import in_two  # it makes what this module describes

        served, later = in_two(snapshot, version)
        assert served is not None  # made here whole: nothing was made beside
        later.add_to(served)
        return served


@dataclass(frozen=True)
class MapCodings:
    """The compressed codings of a new crawl's map, sent after the half that holds the map
    (``making.in_two``): the crawl is served without them meanwhile."""

    timestamp: int
    version: FileVersion
    codings: dict[str, Representation]


@dataclass(frozen=True)
class Half:
    """Answers of a crawl made by one of two processes that make them side by side and
    send them ahead (``making.in_two``): ``fields`` of its PreparedSnapshot, by name."""

    timestamp: int
    version: FileVersion
    fields: dict[str, Any]

    @staticmethod
    def joined(halves: Iterable[Half]) -> PreparedSnapshot | None:
        """The crawl once all its halves are in (those of one file version); None before."""
        fields: dict[str, Any] = {}
        for half in halves:
            fields.update(half.fields)
        if fields.keys() != PREPARED_FIELDS:
            return None
        return PreparedSnapshot(**fields)


PREPARED_FIELDS = {field.name for field in fields(PreparedSnapshot)}


def load_snapshot(path: Path, rules: Rules) -> PreparedSnapshot:
    """Read, decode and prepare a snapshot file, whole."""
    snapshot, version = read_snapshot(path, rules)
    return PreparedSnapshot.prepare(snapshot, version)


def read_snapshot(
    path: Path, rules: Rules, spellings: Spellings | None = None
) -> tuple[Snapshot, FileVersion]:
    """A snapshot file, read and decoded (its hosts spelled from ``spellings``, if given),
    with the version of the file that was read."""
    timestamp = snapshot_timestamp(path.name)
    if timestamp is None:
        raise ValueError(f"{path.name} is not a snapshot file name")
    data, version = read_file(path, rules.max_file_size)
    return decode_snapshot(data, timestamp, rules.allow_empty, spellings), version
