"""crawl/propagation.py: bitnodes' member spelling, latency cells, their compaction and
views, and the kept files' round trips."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest

from crawldash.crawl.address import AddressError
from crawldash.crawl.blocks import from_announcements
from crawldash.crawl.propagation import (
    LATENCY_KEPT,
    MAX_CELL_VALUE,
    SIX_HOURS_AFTER,
    BlocksFile,
    LatencyFile,
    bitnodes_member,
    block_of,
    cells,
    compacted,
    latency_series,
    pack,
    read_block_records,
    read_blocks,
    read_latency,
    with_look,
    write_blocks,
    write_latency,
)


def test_bitnodes_members_are_canonical_addresses():
    assert bitnodes_member("2001:DB8::1-8333") == "[2001:db8::1]:8333"
    assert bitnodes_member("[2001:db8::1]-8333") == "[2001:db8::1]:8333"
    assert bitnodes_member("198.51.100.1-18333") == "198.51.100.1:18333"


@pytest.mark.parametrize(
    "member", ["198.51.100.1", "198.51.100.1-", "-8333", "198.51.100.1-123456", "a.b-1"]
)
def test_a_member_that_is_not_address_port_is_an_address_error(member: str):
    with pytest.raises(AddressError):
        bitnodes_member(member)


def test_cells_are_packed_oldest_first():
    packed = pack({5: (1, 10), 3: (2, 40)})
    assert list(cells(packed)) == [(3, 2, 40), (5, 1, 10)]
    assert len(packed) == 24


def test_compaction_merges_hours_and_six_hours_and_drops_past_30_days():
    now = 10_000
    packed = pack(
        {
            now: (1, 10),
            now - 144: (1, 20),  # a day old: into its hour
            now - 145: (1, 30),  # the same hour
            now - 1008: (2, 40),  # a week old: into its six hours
            now - LATENCY_KEPT: (1, 99),  # 30 days: dropped
        }
    )
    assert compacted(packed, now) == {now: (1, 10), 9852: (2, 50), 8964: (2, 40)}


def test_merged_cells_past_32_bits_keep_their_mean_in_fewer_samples():
    now = 10_000
    full = (600, MAX_CELL_VALUE - 600)  # a 10-minute cell as full as the bridge fills one
    old = now - SIX_HOURS_AFTER - 100
    start = old - old % 36  # 36 cells, merged into one six-hour cell
    merged = compacted(pack({start + n: full for n in range(36)}), now)
    assert list(merged) == [start]
    count, total = merged[start]
    assert 0 < count <= MAX_CELL_VALUE
    assert 0 < total <= MAX_CELL_VALUE
    assert abs(total / count - full[1] / full[0]) < 1e-3 * full[1] / full[0]
    assert list(cells(pack(merged))) == [(start, count, total)]  # it packs
    empty = compacted(pack({start + n: (0, MAX_CELL_VALUE) for n in range(2)}), now)
    assert list(cells(pack(empty))) == [(start, 0, MAX_CELL_VALUE)]  # no sample, no mean


def test_looks_are_kept_for_30_days_each_once():
    looked = with_look(with_look(b"", 10), 10)
    assert list(array("i", looked)) == [10]
    later = with_look(looked, 10 + LATENCY_KEPT)
    assert list(array("i", later)) == [10 + LATENCY_KEPT]


def test_latency_views_say_held_unreachable_and_unknown_apart():
    views = latency_series(pack({1000: (2, 301), 998: (0, 0)}), 1000, with_look(b"", 999))
    assert [len(views[v]) for v in ("daily", "weekly", "monthly")] == [144, 168, 120]
    # 998: held without a time; 999: looked at, no cell; 1000: 301 / 2 rounded half to even
    assert views["daily"][-3:] == [(598_800, 0), (599_400, -1), (600_000, 150)]
    assert views["daily"][0] == ((1000 - 143) * 600, 0)  # nobody looked


def test_blocks_file_round_trip(tmp_path: Path):
    block = from_announcements("cd" * 32, [b"198.51.100.1-8333"], [7.0])
    write_blocks(tmp_path, BlocksFile(123, [block]))
    assert read_blocks(tmp_path) == BlocksFile(123, [block])
    records = read_block_records(tmp_path)
    assert records is not None
    assert [block_of(r) for r in records.blocks] == [block]


def test_latency_file_round_trip_and_absence(tmp_path: Path):
    assert read_latency(tmp_path) is None
    kept = LatencyFile(1000, {"198.51.100.1:8333": pack({1000: (1, 5)})}, {}, b"")
    write_latency(tmp_path, kept)
    assert read_latency(tmp_path) == kept


def test_a_broken_or_oversized_file_is_a_value_error(tmp_path: Path):
    (tmp_path / "blocks.msgpack").write_bytes(b"\xc1 not msgpack")
    with pytest.raises(ValueError, match=r"blocks\.msgpack"):
        read_blocks(tmp_path)
    write_latency(tmp_path, LatencyFile(1, {}, {}, b""))
    with pytest.raises(ValueError, match="over the limit"):
        read_latency(tmp_path, max_size=3)
