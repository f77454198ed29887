"""What the loader process makes of a crawl: every body of the snapshot, each node's JSON.

Everything in a PreparedSnapshot is bytes or numbers, so it crosses from the loader process
cheaply (no per-node objects to rebuild on the serving side).

The plain snapshot body is ready long before the indexes, breakdowns, map and compressed
codings: a load may hand it ``ahead`` as the crawl's FirstAnswers, so that the new crawl
is served (``/api/snapshot``, ``/api/status``) while the rest is made.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ...crawl.breakdown import networks_of
from ...crawl.decode import Rules, Snapshot, decode_snapshot, tally_networks
from ...crawl.files import FileVersion, read_file, snapshot_timestamp
from ...models import ApiSnapshot
from ..bodies import Representation, compressed, represent
from .breakdown import PreparedBreakdown, prepare_breakdowns
from .catalog import NodeCatalog
from .map import PreparedMap, prepare_map

_encoder = msgspec.json.Encoder()


class NodeJson(Mapping[str, bytes]):
    """Each node's JSON object by canonical address, packed: the sorted addresses (shared
    with the catalog), one bytes object, and offsets. It crosses from the loader process as
    three objects instead of two per node; a lookup is a binary search."""

    def __init__(self, addresses: list[str], blob: bytes, starts: array[int]) -> None:
        self.addresses, self.blob, self.starts = addresses, blob, starts

    @classmethod
    def of(cls, addresses: list[str], objects: list[bytes]) -> NodeJson:
        starts = array("I", [0])
        for body in objects:
            starts.append(starts[-1] + len(body))
        return cls(addresses, b"".join(objects), starts)

    def at(self, position: int) -> bytes:
        return self.blob[self.starts[position] : self.starts[position + 1]]

    def __getitem__(self, address: str) -> bytes:
        position = bisect_left(self.addresses, address)
        if position == len(self.addresses) or self.addresses[position] != address:
            raise KeyError(address)
        return self.at(position)

    def __iter__(self) -> Iterator[str]:
        return iter(self.addresses)

    def __len__(self) -> int:
        return len(self.addresses)

    def __reduce__(self) -> tuple[type[NodeJson], tuple[list[str], bytes, array[int]]]:
        return NodeJson, (self.addresses, self.blob, self.starts)


@dataclass(frozen=True)
class FirstAnswers:
    """A new crawl's answers that are ready first: its snapshot body (identity) and what
    /api/status says of it, served until the whole PreparedSnapshot takes over."""

    timestamp: int
    total_nodes: int
    latest_height: int
    identity: Representation
    version: FileVersion  # of the file as it was read


Ahead = Callable[[FirstAnswers], object]  # hands a load's FirstAnswers on, as they are made


@dataclass(frozen=True)
class PreparedSnapshot:
    """The latest snapshot, its response in every encoding, and its nodes by address."""

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

    @classmethod
    def prepare(
        cls, snapshot: Snapshot, version: FileVersion, ahead: Ahead | None = None
    ) -> PreparedSnapshot:
        """Encode and compress the response; slow for a large snapshot: run it off the loop.

        Args:
            snapshot: the decoded crawl.
            version: of the file it was read from.
            ahead: given the crawl's FirstAnswers as soon as they are made.

        Returns:
            Every answer of the crawl.
        """
        total, modified = len(snapshot.nodes), version.mtime_ns / 1e9
        api = ApiSnapshot(snapshot.timestamp, total, snapshot.latest_height, snapshot.nodes)
        identity = represent(_encoder.encode(api), modified)
        # zlib and brotli release the GIL: the body is compressed in a thread while the
        # indexes are built here, so that on two cores compressing adds nothing to a load.
        with ThreadPoolExecutor(1, thread_name_prefix="crawldash-compress") as pool:
            encodings = pool.submit(compressed, identity)
            if ahead is not None:
                ahead(
                    FirstAnswers(
                        snapshot.timestamp, total, snapshot.latest_height, identity, version
                    )
                )
            network = networks_of(snapshot.nodes)
            catalog = NodeCatalog.build(snapshot.nodes, network)
            rows = snapshot.nodes
            nodes = NodeJson.of(
                catalog.addresses, [_encoder.encode(rows[a].named()) for a in catalog.addresses]
            )
            breakdowns = prepare_breakdowns(
                snapshot.timestamp, snapshot.nodes, snapshot.latest_height, network, modified
            )
            return cls(
                snapshot.timestamp,
                total,
                snapshot.latest_height,
                snapshot.skipped_rows,
                encodings.result(),
                nodes,
                tally_networks(network.values()),
                breakdowns,
                catalog,
                version,
                prepare_map(snapshot.timestamp, snapshot.nodes, network, modified),
            )


def load_snapshot(path: Path, rules: Rules, ahead: Ahead | None = None) -> PreparedSnapshot:
    """Read, decode and prepare a snapshot file: what the loader process runs (``ahead``:
    as ``PreparedSnapshot.prepare`` takes it)."""
    timestamp = snapshot_timestamp(path.name)
    if timestamp is None:
        raise ValueError(f"{path.name} is not a snapshot file name")
    data, version = read_file(path, rules.max_file_size)
    snapshot = decode_snapshot(data, timestamp, rules.allow_empty)
    return PreparedSnapshot.prepare(snapshot, version, ahead)
