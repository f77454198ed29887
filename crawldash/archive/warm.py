"""Imported by the loader process at its start, with an archive (``LOADER_PRELOAD``): a
one-row Parquet file is written in memory and its crawl read back, as a pruned crawl's
is, so that pyarrow's lazy set-up (its compute functions, codecs and decoders) is done
once, in the process each load is forked from, rather than again in every child that
reads a crawl back (each child starts from the loader process as it was at its start)."""

from __future__ import annotations

import pyarrow as pa

from . import parquet
from .columns import NAMES, nodes_of
from .layout import CrawlFile


def warm_up() -> None:
    """Write a one-row archive file in memory and read its crawl back."""
    row: dict[str, list[object]] = {name: [None] for name in NAMES}
    row |= {"timestamp": [0], "network": ["main"], "address": ["192.0.2.1"], "port": [8333]}
    row |= {"address_type": ["ipv4"], "services": [0], "height": [0], "position": [0]}
    body = parquet.encode(parquet.table_of(row), {0: CrawlFile(0, 0)}, parquet.PART_ZSTD_LEVEL)
    nodes_of(parquet.crawl_rows(pa.BufferReader(body), 0))


warm_up()
