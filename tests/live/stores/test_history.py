"""live/stores/history.py: the bounded history of crawls and its answers."""

from __future__ import annotations

import json

import pytest

from crawldash.live.stores.history import History, HistoryEntry


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
