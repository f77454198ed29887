"""What the loader process makes of a crawl: every body of the snapshot, each node's JSON.

Everything in a PreparedSnapshot is bytes or numbers, so it crosses from the loader process
cheaply (no per-node objects to rebuild on the serving side).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec

from ..crawl.breakdown import networks_of
from ..crawl.decode import Rules, Snapshot, decode_snapshot, tally_networks
from ..crawl.files import read_file, snapshot_timestamp
from ..models import ApiSnapshot
from .bodies import Representation, compressed, represent
from .breakdowns import PreparedBreakdown, prepare_breakdowns
from .catalog import NodeCatalog

_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class PreparedSnapshot:
    """The latest snapshot, its response in every encoding, and its nodes by address."""

    timestamp: int
    total_nodes: int
    latest_height: int
    skipped_rows: int  # rows of the file whose address was unusable
    representations: dict[str, Representation]  # by content coding: identity, gzip, br
    nodes: dict[str, bytes]  # each node's JSON as /api/check shows it, by canonical address
    networks: tuple[int, ...]  # node counts by network, in NETWORKS order
    breakdowns: dict[str, PreparedBreakdown]  # by key: network, country, asn, ...
    catalog: NodeCatalog  # the nodes as columns, for /api/nodes

    @classmethod
    def prepare(cls, snapshot: Snapshot, modified: float) -> PreparedSnapshot:
        """Encode and compress the response; slow for a large snapshot: run it off the loop."""
        total = len(snapshot.nodes)
        api = ApiSnapshot(snapshot.timestamp, total, snapshot.latest_height, snapshot.nodes)
        encodings = compressed(represent(_encoder.encode(api), modified))
        network = networks_of(snapshot.nodes)
        networks = tally_networks(network.values())
        nodes = {address: _encoder.encode(row.named()) for address, row in snapshot.nodes.items()}
        return cls(
            snapshot.timestamp,
            total,
            snapshot.latest_height,
            snapshot.skipped_rows,
            encodings,
            nodes,
            networks,
            prepare_breakdowns(
                snapshot.timestamp, snapshot.nodes, snapshot.latest_height, network, modified
            ),
            NodeCatalog.build(snapshot.nodes, network),
        )


def load_snapshot(path: Path, rules: Rules) -> PreparedSnapshot:
    """Read, decode and prepare a snapshot file: what the loader process runs."""
    timestamp = snapshot_timestamp(path.name)
    if timestamp is None:
        raise ValueError(f"{path.name} is not a snapshot file name")
    data, version = read_file(path, rules.max_file_size)
    snapshot = decode_snapshot(data, timestamp, rules.allow_empty)
    return PreparedSnapshot.prepare(snapshot, version.mtime_ns / 1e9)
