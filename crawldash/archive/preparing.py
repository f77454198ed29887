"""One crawl made ready for the archive, in a process of a backfill's pool: read, decoded
and made its part file's bytes or, for a day built whole, its rows (export rows go
straight to rows: ``export_rows``); or why it cannot be. What goes wrong with one crawl
costs that crawl, never the run."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ..crawl.decode import Rules, decode_snapshot, unprepared
from ..crawl.files import LoadError, read_file
from . import parquet
from .columns import columns_of
from .export_rows import export_rows
from .layout import CrawlFile
from .writing import archived_as, encode_part


@dataclass(frozen=True)
class Prepared:
    """A crawl read and decoded, as its part file's bytes or (of a day built whole) its
    rows, or why it cannot be."""

    timestamp: int
    crawl: CrawlFile | None = None
    body: bytes = b""
    rows: pa.Table | None = None
    refused: str | None = None

    def __reduce__(self) -> tuple[Callable[..., Prepared], tuple[object, ...]]:
        """Sent from a process of the pool with its rows as one Arrow IPC stream: fewer
        copies than a table pickled column by column, and read back without one."""
        rows = None if self.rows is None else _stream(self.rows)
        return _prepared, (self.timestamp, self.crawl, self.body, rows, self.refused)


def _stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def _prepared(
    timestamp: int, crawl: CrawlFile | None, body: bytes, rows: bytes | None, refused: str | None
) -> Prepared:
    table = None if rows is None else pa.ipc.open_stream(rows).read_all()
    return Prepared(timestamp, crawl, body, table, refused)


def prepare(
    path: Path, timestamp: int, rules: Rules, network: str, whole_day: bool = False
) -> Prepared:
    """A crawl file read, decoded and made its part's bytes or (``whole_day``) its rows
    (in a process of the pool; export rows go straight to rows: ``export_rows``). Without
    the cyclic garbage collector: a crawl's objects make no cycles, and its passes over
    them took a fifth of the time."""
    with _no_collector():
        try:
            return _read_and_prepare(path, timestamp, rules, network, whole_day)
        except (LoadError, FileNotFoundError) as exc:
            return Prepared(timestamp, refused=str(exc))
        except Exception as exc:  # met on this crawl: it costs the crawl, not the run
            return Prepared(timestamp, refused=str(unprepared(exc)))


def _read_and_prepare(
    path: Path, timestamp: int, rules: Rules, network: str, whole_day: bool
) -> Prepared:
    data, version = read_file(path, rules.max_file_size)
    file = CrawlFile(version.size, version.mtime_ns)
    if whole_day and (rows := export_rows(data, timestamp, network, rules.allow_empty)):
        crawl = CrawlFile(file.size, file.mtime_ns, rows.nodes, rows.height)
        return Prepared(timestamp, crawl, rows=rows.rows)
    snapshot = decode_snapshot(data, timestamp, rules.allow_empty)
    if whole_day:
        table = parquet.table_of(columns_of(snapshot, network))
        return Prepared(timestamp, archived_as(snapshot, file), rows=table)
    crawl, body = encode_part(snapshot, network, file)
    return Prepared(timestamp, crawl, body)


@contextlib.contextmanager
def _no_collector() -> Iterator[None]:
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
