"""A crawl of bitnodes' export rows straight to the archive's rows (a backfill's day), with
no node objects between: the rows decoded as plain tuples, read by pyarrow in one pass
(a struct array: no columns of Python objects made first), each host made canonical in
Python once per process and looked up in C after (a day's crawls list mostly the same
nodes), and a repeated address kept as ``decode_snapshot`` keeps it (the later row, at the
first one's place).

The same rows as ``columns_of(decode_snapshot(...))``, but sorted by node (``SORTED_BY``),
so that a day's window is merged from runs rather than gathered from shuffled rows. The
other forms (crawl-only rows, the API object, rows longer than 15 fields, a row with a
value out of its range) are left to ``decode_snapshot``.
"""

from __future__ import annotations

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from ..crawl.address import AddressError, canonical_host, network_of
from ..crawl.decode import check_usable, does_not_decode, export_decoder, form_of
from ..models.crawler import Int32, Int64, Port, Services
from .columns import NODE_FIELDS
from .parquet import ARROW_SCHEMA

# Canonical hosts kept per process, then forgotten all at once: each crawl's lookup hashes
# them all, so a long backfill's years of hosts would cost every crawl.
HOSTS_KEPT = 200_000
SORTED_BY = [("address", "ascending"), ("port", "ascending")]
# the hosts a process has met ("raw", as the crawler wrote them), each one's canonical
# spelling and its type, or null for a host decode skips
_known = {name: pa.array([], pa.string()) for name in ("raw", "canonical", "type")}

# ExportRow's fields, as a tuple: the same checks, without a struct object per row (a
# services value beyond 2^64-1 fails pyarrow's uint64, and the row is left to the decode)
_Row = tuple[
    str, Port, Int32, str | None, Int64, Services, Int32, str | None, str | None, str | None,
    float, float, str | None, str | None, str | None,
]  # fmt: skip
_rows_decoder = msgspec.json.Decoder(list[_Row])
# a row as pyarrow reads it; the port as int64, as decode takes any integer before it
# skips a row whose port is not 1-65535
_ROW = pa.struct(
    [("host", pa.string()), ("port", pa.int64())]
    + [ARROW_SCHEMA.field(name) for name in NODE_FIELDS]
)


class ExportRows:
    """A crawl's rows as the archive's table, with its nodes and consensus height."""

    def __init__(self, rows: pa.Table, height: int) -> None:
        self.rows = rows
        self.nodes = len(rows)
        self.height = height


def export_rows(data: bytes, timestamp: int, network: str, allow_empty: bool) -> ExportRows | None:
    """The crawl's rows as the archive's table, sorted by node, if it is in the export form.

    Args:
        data: the crawl file's bytes.
        timestamp: the crawl's.
        network: the network's name.
        allow_empty: whether a crawl with no nodes is archived.

    Returns:
        Its rows (``position``: each row's place in the crawl as decoded), or None for a
        crawl left to ``decode_snapshot``.

    Raises:
        LoadError: what ``decode_snapshot`` raises for the same bytes.
    """
    rows = _decoded(data)
    if rows is None:
        return None
    try:
        struct = pa.array(rows, _ROW)
    except (pa.ArrowInvalid, OverflowError):  # services beyond 2^64-1
        return None
    columns = dict(zip(_ROW.names, struct.flatten(), strict=True))
    columns["address"], columns["address_type"] = _canonical_hosts(columns["host"])
    usable = not columns["address"].null_count and _usable_ports(columns["port"])
    table = _sorted(columns, timestamp, network) if usable else None
    if table is None or _repeats(table):  # an unusable or repeated address: the rows decode keeps
        hosts, ports = columns["address"].to_pylist(), columns["port"].to_pylist()
        kept = _kept(hosts, ports)
        check_usable(len(kept), len(hosts) - _usable_rows(hosts, ports), allow_empty)
        picked = pa.array(kept, pa.int64())
        table = _sorted(
            {name: column.take(picked) for name, column in columns.items()}, timestamp, network
        )
    else:
        check_usable(len(table), 0, allow_empty)
    return ExportRows(table, _most_common(table["height"]))


def _decoded(data: bytes) -> list[_Row] | None:
    """The rows as tuples, or None for another form (decoded the long way, by
    ``decode_snapshot``); what decode refuses raises as it does."""
    try:
        if form_of(data) != b"[":
            return None
        return _rows_decoder.decode(data)
    except (msgspec.DecodeError, RecursionError):
        pass
    try:
        export_decoder.decode(data)  # another form, rows to skip, or why it cannot be read
    except (msgspec.DecodeError, RecursionError) as exc:
        raise does_not_decode(exc) from None
    return None


def _canonical_hosts(hosts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Each row's canonical host and its type, null for a host decode skips: the hosts met
    before looked up in C, only a crawl's new ones (mostly a run's first crawl's) in Python."""
    index = pc.index_in(hosts, value_set=_known["raw"])
    if index.null_count:
        new = pc.unique(pc.filter(hosts, pc.is_null(index))).to_pylist()
        if len(_known["raw"]) + len(new) > HOSTS_KEPT:
            _known.update({name: array.slice(0, 0) for name, array in _known.items()})
            new = pc.unique(hosts).to_pylist()
        _learn(new)
        index = pc.index_in(hosts, value_set=_known["raw"])
    return _known["canonical"].take(index), _known["type"].take(index)


def _learn(hosts: list[str]) -> None:
    learnt = [_canonical(host) for host in hosts]
    canonical = [known[0] if known else None for known in learnt]
    types = [known[1] if known else None for known in learnt]
    for name, values in (("raw", hosts), ("canonical", canonical), ("type", types)):
        _known[name] = pa.concat_arrays([_known[name], pa.array(values, pa.string())])


def _canonical(host: str) -> tuple[str, str] | None:
    try:
        canonical = canonical_host(host)
    except AddressError:
        return None
    return canonical, network_of(canonical)


def _usable_ports(port: pa.Array) -> bool:
    """Whether every port is one decode takes (1-65535)."""
    least, most = pc.min_max(port).values()
    return not len(port) or (least.as_py() >= 1 and most.as_py() <= 65535)


def _usable_rows(hosts: list[str | None], ports: list[int]) -> int:
    return sum(1 for host, port in zip(hosts, ports, strict=True) if host and 1 <= port <= 65535)


def _kept(hosts: list[str | None], ports: list[int]) -> list[int]:
    """The rows kept, at their addresses' first places: the later of two rows of one
    address (a dict keeps a key's first place and its last value)."""
    places: dict[tuple[str, int], int] = {}
    for index, (host, port) in enumerate(zip(hosts, ports, strict=True)):
        if host is not None and 1 <= port <= 65535:
            places[host, port] = index
    return list(places.values())


def _sorted(columns: dict[str, pa.Array], timestamp: int, network: str) -> pa.Table:
    """The rows, all usable, as a table sorted by node (``position``: their order)."""
    count = len(columns["port"])
    columns = columns | dict(
        timestamp=pa.repeat(pa.scalar(timestamp, pa.int64()), count),
        network=pa.repeat(pa.scalar(network, pa.string()), count),
        port=columns["port"].cast(pa.int32()),
        position=pa.array(range(count), pa.int32()),
    )
    table = pa.table([columns[name] for name in ARROW_SCHEMA.names], schema=ARROW_SCHEMA)
    return table.take(pc.sort_indices(table, SORTED_BY))


def _repeats(table: pa.Table) -> bool:
    """Whether two rows of a table sorted by node are of one address."""
    if len(table) < 2:
        return False
    address, port = table["address"], table["port"]
    same = pc.and_(pc.equal(address[1:], address[:-1]), pc.equal(port[1:], port[:-1]))
    return bool(pc.any(same).as_py())


def _most_common(heights: pa.ChunkedArray) -> int:
    """The most common height (the higher one on a tie), as ``most_common_height``."""
    if not len(heights):
        return 0
    counted = pc.value_counts(heights)
    counts = counted.field("counts")
    tied = pc.filter(counted.field("values"), pc.equal(counts, pc.max(counts)))
    return int(pc.max(tied).as_py())
