"""A window's rows put in the archive's order by one integer key per row
(``parquet.node_order``): the order ``sort_by`` gives on the sort keys, for a window of
real-shaped crawls in any order, and ``sort_by`` itself where the key cannot hold them."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from crawldash.archive.columns import SORT_KEYS, columns_of
from crawldash.archive.parquet import WINDOW, node_order, table_of
from crawldash.crawl.decode import decode_snapshot
from tests.test_archive import END, write_crawls

BY_NODE = [(key, "ascending") for key in SORT_KEYS]


def window_of(folder: Path) -> pa.Table:
    """A window's crawls read from their files, their rows shuffled."""
    end = END // WINDOW * WINDOW + 12 * 600  # the 12 crawls in one window
    counts = write_crawls(folder, crawls=12, nodes=200, interval=600, end=end)
    tables = [
        table_of(columns_of(decode_snapshot((folder / f"{t}.json").read_bytes(), t), "main"))
        for t in sorted(counts)
    ]
    rows = pa.concat_tables(tables)
    shuffled = list(range(len(rows)))
    random.Random(4).shuffle(shuffled)
    return rows.take(shuffled)


def test_a_window_s_rows_come_in_the_order_sort_by_gives(tmp_path: Path) -> None:
    rows = window_of(tmp_path)
    assert len(set(rows["address"].to_pylist())) > 100  # many nodes, most in every crawl
    assert rows.take(node_order(rows)).equals(rows.sort_by(BY_NODE))


@pytest.mark.parametrize(
    "change",
    [
        "null address",  # nulls last, as sort_by puts them
        "ports far apart",  # beyond the key's port bits
        "times far apart",  # beyond a window's
    ],
)
def test_rows_the_key_cannot_hold_are_sorted_by_sort_by(tmp_path: Path, change: str) -> None:
    rows = window_of(tmp_path)
    index = rows.schema.get_field_index
    if change == "null address":
        address = rows["address"].to_pylist()
        address[7] = None
        rows = rows.set_column(index("address"), "address", pa.array(address, pa.string()))
    elif change == "ports far apart":
        port = pc.if_else(pc.equal(rows["port"], rows["port"][3]), 2**30, rows["port"])
        rows = rows.set_column(index("port"), "port", pc.cast(port, pa.int32()))
    else:
        time = pc.add(rows["timestamp"], pc.multiply(rows["port"].cast(pa.int64()), WINDOW))
        rows = rows.set_column(index("timestamp"), "timestamp", time)
    assert rows.take(node_order(rows)).equals(rows.sort_by(BY_NODE))
