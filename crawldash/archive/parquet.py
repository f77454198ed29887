"""The archive's Parquet files, written with pyarrow (chosen by measurement over DuckDB's
``COPY ... TO``: docs/archive.md): one crawl's part, a compacted day, and a crawl read back.

How a day's 144 rows of one node come to almost nothing: the rows are sorted by address,
port and timestamp, so each node's rows are side by side; what a node repeats (its user
agent, place, operator) is dictionary-coded in runs, and what steps (the timestamp, the
height) is delta-coded; then zstd. Only ``position`` (the node's place in each crawl's
fresh order) is as random as the crawler made it.

A day file holds one row group per WINDOW of the day's crawls (each sorted by node): a
crawl read back reads only its window's row group, found by its timestamp statistics,
not the whole day; each row group repeats its dictionaries, so fewer and longer windows
compress better (docs/archive.md has the sizes measured).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .columns import NAMES, SCHEMA, SORT_KEYS
from .layout import CrawlFile, manifest_body, manifest_crawls

METADATA_KEY = b"crawldash.crawls"  # each file's crawls, as in _crawls.json
DELTA_CODED = ("timestamp", "height", "position")
ZSTD_LEVEL = 9  # a compacted day's: written once, kept for good
PART_ZSTD_LEVEL = 1  # a crawl's part: written fast, rewritten at the day's compaction
WINDOW = 4 * 3600  # seconds of crawls per row group of a day file: 6 a day
RANK_BITS, PORT_BITS, TIME_BITS = 31, 18, 14  # a window's sort key: 63 bits, a WINDOW's time
_TYPES = {
    "int64": pa.int64(),
    "uint64": pa.uint64(),
    "int32": pa.int32(),
    "string": pa.string(),
    "float64": pa.float64(),
}
STRINGS = [name for name, kind in SCHEMA if kind == "string"]
ARROW_SCHEMA = pa.schema([(name, _TYPES[kind]) for name, kind in SCHEMA])
SERVED = [name for name in NAMES if name not in ("network", "address_type")]  # read back
SERVED_STRINGS = [name for name in STRINGS if name in SERVED]
SERVED_SCHEMA = pa.schema([ARROW_SCHEMA.field(name) for name in SERVED])
TIMESTAMP = NAMES.index("timestamp")


def table_of(columns: Mapping[str, Sequence[Any]]) -> pa.Table:
    """The rows of ``columns_of()`` as a table of the archive's schema."""
    return pa.table(
        [pa.array(columns[name], ARROW_SCHEMA.field(name).type) for name in NAMES],
        schema=ARROW_SCHEMA,
    )


def encode(table: pa.Table, crawls: dict[int, CrawlFile], level: int = ZSTD_LEVEL) -> bytes:
    """``table``'s rows as a Parquet file: one row group per WINDOW, each sorted by node.

    Args:
        table: rows of the archive's schema, in any order.
        crawls: the crawls the rows are of, kept in the file's metadata.
        level: zstd's.

    Returns:
        The file's bytes.
    """
    schema = ARROW_SCHEMA.with_metadata({METADATA_KEY: manifest_body(crawls)})
    windows = pc.divide(table["timestamp"], WINDOW)  # integers: floor for crawls after 1970
    sink = pa.BufferOutputStream()
    with _writer(sink, schema, level) as writer:
        for window in sorted(pc.unique(windows).to_pylist()):
            _write_window(writer, table.filter(pc.equal(windows, window)))
    return bytes(sink.getvalue())


class DayWriter:
    """A day file written as its crawls come, oldest first (a backfill's day): the rows
    of a window are held until a crawl of the next window comes, then written as its row
    group, so a day's file is made without holding the day's rows, and is what ``encode``
    makes of the same crawls (the crawls' metadata is in the file's key-value metadata,
    where ``crawls_in`` reads it, not in its Arrow schema: it is known at the end only).
    """

    def __init__(self, level: int = ZSTD_LEVEL) -> None:
        self.sink = pa.BufferOutputStream()
        self.writer = _writer(self.sink, ARROW_SCHEMA, level)
        self.crawls: dict[int, CrawlFile] = {}
        self.window: int | None = None
        self.held: list[pa.Table] = []

    def add(self, timestamp: int, crawl: CrawlFile, table: pa.Table) -> None:
        """Add one crawl's rows (``table_of``); crawls come in their order."""
        if timestamp // WINDOW != self.window:
            self._write_held()
            self.window = timestamp // WINDOW
        self.held.append(table)
        self.crawls[timestamp] = crawl

    def finish(self) -> bytes:
        """The file's bytes (the writer is closed: nothing more is added)."""
        self._write_held()
        self.writer.add_key_value_metadata({METADATA_KEY: manifest_body(self.crawls)})
        self.writer.close()
        return bytes(self.sink.getvalue())

    def _write_held(self) -> None:
        if self.held:
            _write_window(self.writer, pa.concat_tables(self.held))
            self.held = []


def _writer(sink: pa.NativeFile, schema: pa.Schema, level: int) -> pq.ParquetWriter:
    return pq.ParquetWriter(
        sink,
        schema,
        compression="zstd",
        compression_level=level,
        use_dictionary=[n for n in NAMES if n not in DELTA_CODED],
        column_encoding=dict.fromkeys(DELTA_CODED, "DELTA_BINARY_PACKED"),
        write_statistics=["timestamp", "address", "port", "network", "address_type"],
    )


def _write_window(writer: pq.ParquetWriter, rows: pa.Table) -> None:
    """A window's rows as one row group, sorted by node."""
    ordered = rows.take(node_order(rows))
    writer.write_table(ordered, row_group_size=max(1, len(ordered)))


def node_order(rows: pa.Table) -> pa.Array:
    """The indices that sort a window's rows by SORT_KEYS, as ``sort_by`` does (both are
    stable), but comparing one integer per row rather than strings: the address's rank
    among the window's addresses, then the port, then the time from the window's first
    crawl, in 63 bits. Rows the key cannot hold (a null, ports or times too far apart:
    never a window's) are sorted by ``sort_by``'s way.

    Args:
        rows: rows of the archive's schema, in any order.

    Returns:
        Their indices in the archive's order.
    """
    address, port, timestamp = (rows[key] for key in SORT_KEYS)
    if not len(rows) or address.null_count or port.null_count or timestamp.null_count:
        return pc.sort_indices(rows, [(key, "ascending") for key in SORT_KEYS])
    port_from, port_to = pc.min_max(port).values()
    time_from, time_to = pc.min_max(timestamp).values()
    ports = port_to.as_py() - port_from.as_py()
    times = time_to.as_py() - time_from.as_py()
    if len(rows) >= 1 << RANK_BITS or ports >= 1 << PORT_BITS or times >= 1 << TIME_BITS:
        return pc.sort_indices(rows, [(key, "ascending") for key in SORT_KEYS])
    addresses = pc.unique(address)
    rank = pc.index_in(address, value_set=addresses.take(pc.sort_indices(addresses)))
    key = pc.shift_left(pc.cast(rank, pa.int64()), PORT_BITS + TIME_BITS)
    key = pc.add(key, pc.shift_left(_from(port, port_from), TIME_BITS))
    return pc.sort_indices(pc.add(key, _from(timestamp, time_from)))


def _from(values: pa.ChunkedArray, least: pa.Scalar) -> pa.ChunkedArray:
    return pc.subtract(pc.cast(values, pa.int64()), pc.cast(least, pa.int64()))


def write_bytes(path: Path, body: bytes) -> int:
    """Write a file atomically (a temporary file beside it, flushed to disk, then renamed
    over): a reader sees the whole file or none.

    Returns:
        The bytes written.
    """
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return len(body)


def write(
    table: pa.Table, path: Path, crawls: dict[int, CrawlFile], level: int = ZSTD_LEVEL
) -> int:
    """``encode`` then ``write_bytes``: the file's bytes written."""
    return write_bytes(path, encode(table, crawls, level))


def crawls_in(path: Path) -> dict[int, CrawlFile]:
    """The crawls a file holds, from its key-value metadata."""
    metadata = pq.read_metadata(path).metadata or {}
    return manifest_crawls(metadata[METADATA_KEY]) if METADATA_KEY in metadata else {}


def read(path: Path) -> pa.Table:
    return pq.read_table(path, schema=ARROW_SCHEMA)


def crawl_rows(path: Path | pa.NativeFile, timestamp: int) -> dict[str, list[Any]]:
    """One crawl's rows of a file, in the crawl's order (by ``position``), as columns
    (``nodes_of()`` takes them), but those the served form does not hold (``network``,
    ``address_type``). Only the row groups whose timestamp statistics may hold the crawl
    are read (one, in a day file: its window); their strings are kept as the dictionaries
    they are stored as until the crawl's rows are taken. ``ParquetFile``, not
    ``read_table``: the first answer does not wait for pyarrow's dataset module."""
    file = pq.ParquetFile(path, read_dictionary=SERVED_STRINGS)
    metadata = file.metadata
    groups = [
        index
        for index in range(metadata.num_row_groups)
        if _may_hold(metadata.row_group(index).column(TIMESTAMP).statistics, timestamp)
    ]
    table = file.read_row_groups(groups, columns=SERVED, use_threads=False)
    table = table.filter(pc.equal(table["timestamp"], timestamp))
    table = table.take(pc.sort_indices(table["position"])).cast(SERVED_SCHEMA)
    return {name: table[name].to_pylist() for name in SERVED}


def _may_hold(statistics: pq.Statistics | None, timestamp: int) -> bool:
    if statistics is None or not statistics.has_min_max:
        return True
    return bool(statistics.min <= timestamp <= statistics.max)
