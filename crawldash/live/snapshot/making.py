"""A crawl's answers as a load makes them: every answer but the compressed codings of its
bodies (and its CSV records) first, handed ``ahead`` so that the server serves the crawl
from that moment; then what follows it (``Later``).

Where a load may run work ``beside`` itself (a process forked from the loader's child,
``loader/process.py``), the map and the breakdowns are made there while the rest is made
here, on two cores: each half goes ahead on its own (a ``Half``), and the server serves
the crawl once both are in; the map's codings follow its half (``MapCodings``). The
codings of the snapshot are compressed in a thread once the crawl is sent (zlib and
brotli release the GIL), beside what else follows it. On one core nothing is made side by
side: the crawl's answers come first, what follows it after.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...crawl.breakdown import networks_of
from ...crawl.decode import Snapshot, tally_networks
from ...crawl.files import FileVersion
from ..bodies import Codings, compressed, every_coding, represent
from .breakdown import prepare_breakdowns
from .catalog import NodeCatalog, by_address
from .csv_records import CsvRecords
from .map import prepare_map
from .prepared import Ahead, Half, Later, MapCodings, NodeJson, PreparedSnapshot, SnapshotBody

# Runs a function in a process of its own beside this one; returns a wait for its end
# (True: it ended well), or None where no such process can be had (``process.forked``).
Beside = Callable[[Callable[[], None]], Callable[[], bool] | None]


def in_two(
    snapshot: Snapshot,
    version: FileVersion,
    ahead: Ahead | None = None,
    beside: Beside | None = None,
    cores: int = 2,
) -> tuple[PreparedSnapshot | None, Later]:
    """The crawl with every answer but what follows it, handed to ``ahead`` as soon as it
    is made, and then what follows.

    Args:
        snapshot: the decoded crawl.
        version: of the file it was read from.
        ahead: given the crawl (or each Half of it) before what follows is made.
        beside: runs work in a process of its own: the map and the breakdowns are made
            there, and sent ahead from there as a Half.
        cores: the cores this may run on: with one, nothing is made side by side (not
            even the codings, in a thread), so that the crawl's answers are made first.

    Returns:
        The crawl, None where it went ahead in halves (it is nowhere whole here), and what
        follows it.
    """
    total, modified = len(snapshot.nodes), version.mtime_ns / 1e9
    network = networks_of(snapshot.nodes) if snapshot.networks is None else snapshot.networks

    def counted() -> dict[str, Any]:
        """The half made beside: the map and the breakdowns."""
        return {
            "map": prepare_map(snapshot.timestamp, snapshot.nodes, network, modified),
            "breakdowns": prepare_breakdowns(
                snapshot.timestamp, snapshot.nodes, snapshot.latest_height, network, modified
            ),
        }

    def counted_ahead() -> None:
        made = counted()
        # Small: their codings are made before they are sent. The map's follow its half.
        for body in made["breakdowns"].values():
            body.default.update(every_coding(body.default))
        assert ahead is not None
        ahead(Half(snapshot.timestamp, version, made))
        ahead(MapCodings(snapshot.timestamp, version, every_coding(made["map"].default)))

    side_by_side = beside is not None and ahead is not None and cores > 1
    waiting = beside(counted_ahead) if beside is not None and side_by_side else None
    body = SnapshotBody.of(snapshot)
    identity = represent(body.body, modified)
    order = by_address(body.addresses)
    with ThreadPoolExecutor(1, thread_name_prefix="crawldash-compress") as pool:
        catalog = NodeCatalog.build(snapshot.nodes, network, with_csv=False, order=order)
        fields: dict[str, Any] = {
            "timestamp": snapshot.timestamp,
            "total_nodes": total,
            "latest_height": snapshot.latest_height,
            "skipped_rows": snapshot.skipped_rows,
            "representations": Codings(identity=identity),
            "nodes": NodeJson.within(catalog.addresses, body, order),
            "networks": tally_networks(network.values()),
            "catalog": catalog,
            "version": version,
        }
        served: PreparedSnapshot | None = None
        if waiting is not None:
            assert ahead is not None
            ahead(Half(snapshot.timestamp, version, fields))
        else:
            served = PreparedSnapshot(**fields, **counted())
            if ahead is not None:
                ahead(served)
        if waiting is not None and not waiting():  # the process beside failed: its half
            counted_ahead()  # is made here
        # Begun once the crawl is sent whole (both halves): before, it would take a core
        # from what the crawl's switch waits for.
        encodings = pool.submit(compressed, identity) if cores > 1 else None
        csv = CsvRecords.of(snapshot.nodes)
        breakdowns = served.breakdowns if served is not None else {}
        later = Later(
            snapshot.timestamp,
            version,
            {
                coding: body
                for coding, body in (
                    encodings.result() if encodings else compressed(identity)
                ).items()
                if coding != "identity"
            },
            {by: every_coding(breakdown.default) for by, breakdown in breakdowns.items()},
            every_coding(served.map.default) if served is not None else {},
            csv,
        )
    return served, later
