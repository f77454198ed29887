"""live/stores/history.py: the bounded history of crawls, its answers and its index file
in each format this version reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crawldash.live.stores.history import (
    Folder,
    History,
    HistoryEntry,
    Kept,
    Unusable,
    decode_history,
    decode_kept,
    encode_history,
)
from crawldash.live.stores.tallies import Values


def filled(capacity: int, *timestamps: int) -> History:
    history = History(capacity)
    for timestamp in timestamps:
        history.record(HistoryEntry(timestamp, timestamp // 100))
    return history


def test_entries_stay_in_time_order_and_the_oldest_go_past_capacity():
    history = filled(3, 300, 100, 200, 400)
    assert [e.timestamp for e in history.entries()] == [200, 300, 400]
    assert not history.holds(100)
    assert history.get(300) == HistoryEntry(300, 3)
    assert history.recent(2) == [HistoryEntry(300, 3), HistoryEntry(400, 4)]


def test_recording_an_older_crawl_into_a_full_history_or_the_same_entry_changes_nothing():
    history = filled(3, 200, 300, 400)
    changes = history.changes
    assert not history.record(HistoryEntry(50, 1))
    assert not history.record(HistoryEntry(400, 4))
    assert history.changes == changes
    assert history.record(HistoryEntry(400, 9))  # a rewritten crawl replaces its entry
    assert history.get(400) == HistoryEntry(400, 9)


def test_the_body_is_the_most_recent_points_in_either_shape():
    history = filled(5, 100, 200)
    history.record(HistoryEntry(300, 3, networks=(1, 2, 0, 0, 0)))
    assert json.loads(history.body(2).body) == [
        {"timestamp": 200, "reachable": 2},
        {"timestamp": 300, "reachable": 3},
    ]
    by_network = json.loads(history.body(1, by_network=True).body)
    assert by_network[0]["networks"] == {"ipv4": 1, "ipv6": 2, "onion": 0, "i2p": 0, "cjdns": 0}
    assert history.body(3, coding="gzip").encoding == "gzip"  # all that is held
    assert history.body(2, coding="gzip").encoding is None  # another length: uncompressed


def test_the_median_interval_takes_the_lower_middle():
    assert filled(10, 100).median_interval() is None
    assert filled(10, 0, 600, 1200, 5000).median_interval() == 600
    assert filled(10, 0, 600, 1800).median_interval() == 600


def test_an_entry_with_the_wrong_number_of_networks_is_refused():
    with pytest.raises(ValueError, match="3 network counts"):
        HistoryEntry(1, 1, networks=(1, 2, 3))


def test_the_index_round_trips_with_its_folder_and_values(tmp_path: Path):
    values = Values()
    counts = values.pack({"country": [("RU", 2)]})
    entries = [HistoryEntry(100, 2, 10, 20, (2, 0, 0, 0, 0), 900, counts)]
    folder = Folder.of(tmp_path)
    assert folder is not None
    data = encode_history(Kept(entries, values.copy()), folder)
    assert decode_kept(data) == (folder, Kept(entries, values.copy()))
    assert folder.same_folder(Folder.of(tmp_path))
    assert Folder.of(tmp_path / "missing") is None


def test_formats_one_and_two_are_still_read():
    assert decode_history(b"[[100, 2]]") == (None, [HistoryEntry(100, 2)])
    two = b'{"format": 2, "folder": null, "entries": [[100, 2, 1, 1]]}'
    assert decode_history(two) == (None, [HistoryEntry(100, 2, 1, 1)])


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"format": 9, "entries": []}', "unknown format version 9"),
        (b'{"format": 3, "folder": null, "entries": []}', "without its values"),
        (b'{"format": 2}', "without its folder or entries"),
        (b"[[1, 2, 3, 4, [1]]]", "network counts"),
        (b"not json", "JSON"),
        (
            b'{"format": 3, "folder": null, "values": [[], [], [], [], [], []], '
            b'"entries": [[1, 1, 0, 0, null, null, "SAQAAQAAAAAAAAAAAAAAAAAAAAAAAA=="]]}',
            "counts by value unusable",
        ),
    ],
    ids=["unknown-format", "no-values", "no-entries", "bad-entry", "not-json", "bad-counts"],
)
def test_an_unusable_index_says_why(data: bytes, reason: str):
    with pytest.raises(Unusable, match=reason):
        decode_kept(data)
