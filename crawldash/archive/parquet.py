"""The archive's Parquet files, written with pyarrow (chosen by measurement over DuckDB's
``COPY ... TO``: docs/archive.md): one crawl's part, a compacted day, and a crawl read back.

How a day's 144 rows of one node come to almost nothing: the rows are sorted by address,
port and timestamp, so each node's rows are side by side; what a node repeats (its user
agent, place, operator) is dictionary-coded in runs, and what steps (the timestamp, the
height) is delta-coded; then zstd. Only ``position`` (the node's place in each crawl's
fresh order) is as random as the crawler made it.
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
ROW_GROUP_ROWS = 4 << 20  # a day of 15,000 nodes is one row group
_TYPES = {"int64": pa.int64(), "int32": pa.int32(), "string": pa.string(), "float64": pa.float64()}
STRINGS = [name for name, kind in SCHEMA if kind == "string"]
ARROW_SCHEMA = pa.schema([(name, _TYPES[kind]) for name, kind in SCHEMA])
SERVED = [name for name in NAMES if name not in ("network", "address_type")]  # read back
SERVED_STRINGS = [name for name in STRINGS if name in SERVED]
SERVED_SCHEMA = pa.schema([ARROW_SCHEMA.field(name) for name in SERVED])


def table_of(columns: Mapping[str, Sequence[Any]]) -> pa.Table:
    """The rows of ``columns_of()`` as a table of the archive's schema."""
    return pa.table(
        [pa.array(columns[name], ARROW_SCHEMA.field(name).type) for name in NAMES],
        schema=ARROW_SCHEMA,
    )


def write(
    table: pa.Table, path: Path, crawls: dict[int, CrawlFile], level: int = ZSTD_LEVEL
) -> int:
    """Sort ``table`` and write it to ``path`` atomically (a temporary file beside it,
    flushed to disk, then renamed over): a reader sees the whole file or none.

    Args:
        table: rows of the archive's schema, in any order.
        path: the file to write.
        crawls: the crawls the rows are of, kept in the file's metadata.
        level: zstd's.

    Returns:
        The bytes written.
    """
    ordered = table.sort_by([(key, "ascending") for key in SORT_KEYS])
    ordered = ordered.replace_schema_metadata({METADATA_KEY: manifest_body(crawls)})
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            pq.write_table(
                ordered,
                handle,
                compression="zstd",
                compression_level=level,
                use_dictionary=[n for n in NAMES if n not in DELTA_CODED],
                column_encoding=dict.fromkeys(DELTA_CODED, "DELTA_BINARY_PACKED"),
                row_group_size=ROW_GROUP_ROWS,
                write_statistics=["timestamp", "address", "port", "network", "address_type"],
            )
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path.stat().st_size


def crawls_in(path: Path) -> dict[int, CrawlFile]:
    """The crawls a file holds, from its metadata."""
    metadata = pq.read_schema(path).metadata or {}
    return manifest_crawls(metadata[METADATA_KEY]) if METADATA_KEY in metadata else {}


def read(path: Path) -> pa.Table:
    return pq.read_table(path, schema=ARROW_SCHEMA)


def crawl_rows(path: Path, timestamp: int) -> dict[str, list[Any]]:
    """One crawl's rows of a file, as columns (``nodes_of()`` takes them), but those the
    served form does not hold (``network``, ``address_type``). A day's crawls are
    interleaved (sorted by node) in one row group, so no row group can be skipped (a filter
    pushed down to the reader measured slower): the columns are read whole, their strings
    kept as the dictionaries they are stored as (not made into a day's worth of strings),
    then the crawl's rows taken. ``ParquetFile``, not ``read_table``: the first answer does
    not wait for pyarrow's dataset module to be imported."""
    table = pq.ParquetFile(path, read_dictionary=SERVED_STRINGS).read(columns=SERVED)
    table = table.filter(pc.equal(table["timestamp"], timestamp)).combine_chunks()
    table = table.cast(SERVED_SCHEMA)
    return {name: table[name].to_pylist() for name in SERVED}
