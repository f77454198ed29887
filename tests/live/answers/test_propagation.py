"""live/answers/propagation.py: block and latency answers as bitnodes.io's API v1 gives
them, built once per version of the bridge's kept files."""

from __future__ import annotations

import json
from pathlib import Path

from crawldash.crawl.blocks import from_announcements
from crawldash.crawl.propagation import (
    Block,
    BlocksFile,
    LatencyFile,
    pack,
    write_blocks,
    write_latency,
)
from crawldash.live.answers.propagation import Propagation, inv_body, latency_body, prepare

HASH = "ab" * 32
BLOCK = from_announcements(HASH, [b"198.51.100.1-8333", b"198.51.100.2-8333"], [1000.0, 1250.5])
NODE = "198.51.100.1:8333"


def test_inv_body_rounds_and_names_percentiles_as_bitnodes_does():
    stats = json.loads(inv_body(BLOCK))["stats"]
    assert stats["head"] == [["198.51.100.1:8333", 1000], ["198.51.100.2:8333", 1250]]
    assert (stats["min"], stats["max"], stats["mean"], stats["50%"]) == (0, 250, 125.25, 125.25)
    assert stats["90%"] == 225.45
    assert stats["ecdf"][0] == [0, 0]
    assert stats["ecdf"][-1] == [250, 100]
    assert len(stats["ecdf"]) == 21


def test_a_block_kept_without_a_curve_has_no_ecdf():
    old = Block(HASH, 1, 1, 0.0, 0.0, 0.0, 0.0, 0.0, [])
    assert "ecdf" not in json.loads(inv_body(old))["stats"]


def test_prepare_lists_rows_newest_first():
    other = from_announcements("cd" * 32, [b"198.51.100.1-8333"], [5.0])
    prepared = prepare([other, BLOCK])
    assert prepared.hashes == ["cd" * 32, HASH]
    assert json.loads(prepared.rows[1]) == {
        "inv_hash": HASH,
        "first_seen": 1000,
        "nodes": 2,
        "50%": 125.25,
        "90%": 225.45,
    }
    assert set(prepared.bodies) == {HASH, "cd" * 32}


def test_latency_body_has_the_three_views():
    body = json.loads(latency_body(pack({1000: (1, 40)}), 1000, b""))
    assert [len(body[v]) for v in ("daily_latency", "weekly_latency", "monthly_latency")] == [
        144,
        168,
        120,
    ]
    assert body["daily_latency"][-1] == {"t": 600_000, "v": 40}


def test_look_reads_what_changed_and_take_swaps_it_in(tmp_path: Path):
    kept = Propagation(tmp_path)
    assert kept.look() is None  # no file yet
    write_blocks(tmp_path, BlocksFile(1, [BLOCK]))
    write_latency(tmp_path, LatencyFile(1000, {NODE: pack({1000: (1, 40)})}, {}, b""))
    loaded = kept.look()
    assert loaded is not None
    kept.take(loaded)
    assert kept.blocks.hashes == [HASH]
    assert kept.latency_of(NODE) == latency_body(pack({1000: (1, 40)}), 1000, b"")
    assert kept.latency_of("198.51.100.9:8333") is None
    assert kept.look() is None  # nothing changed since
    assert kept.changes == 1


def test_a_broken_file_is_refused_and_the_last_good_data_stays(tmp_path: Path):
    kept = Propagation(tmp_path)
    write_blocks(tmp_path, BlocksFile(1, [BLOCK]))
    first = kept.look()
    assert first is not None
    kept.take(first)
    (tmp_path / "blocks.msgpack").write_bytes(b"\xc1 broken")
    assert kept.look() is None
    assert kept.blocks.hashes == [HASH]


def test_no_folder_has_nothing_to_serve():
    assert Propagation(None).look() is None
    assert Propagation(None).latency_of(NODE) is None
