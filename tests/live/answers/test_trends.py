"""live/answers/trends.py: the history by value, by a user agent's text, and as CSV."""

from __future__ import annotations

import json

from crawldash.live.answers.trends import Trends
from crawldash.live.stores.history import History, HistoryEntry
from crawldash.live.stores.tallies import Tallies


def trends() -> Trends:
    """Three crawls: the first counted before counts by value were kept."""
    history = History(10)
    values = history.values
    history.record(HistoryEntry(100, 5))
    older: Tallies = {
        "country": [("RU", 3), ("DE", 1), (None, 2)],
        "user_agent": [("/Satoshi:27/", 4), ("/Knots/", 2)],
    }
    history.record(HistoryEntry(200, 6, networks=(4, 2, 0, 0, 0), counts=values.pack(older)))
    newest: Tallies = {
        "country": [("RU", 2), ("DE", 4), ("=cmd", 1)],
        "user_agent": [("/satoshi:28/", 7)],
    }
    history.record(HistoryEntry(300, 7, networks=(5, 2, 0, 0, 0), counts=values.pack(newest)))
    return Trends(history)


def test_counts_show_the_newest_crawls_top_values_then_unknown_and_other():
    points = json.loads(trends().counts("country", 1, 10).body)
    assert points == [
        {"timestamp": 100, "reachable": 5},  # no counts: none invented
        {"timestamp": 200, "reachable": 6, "counts": {"DE": 1, "unknown": 2, "other": 3}},
        {"timestamp": 300, "reachable": 7, "counts": {"DE": 4, "unknown": 0, "other": 3}},
    ]


def test_limit_takes_the_most_recent_crawls():
    points = json.loads(trends().counts("country", 2, 1).body)
    assert points == [
        {"timestamp": 300, "reachable": 7, "counts": {"DE": 4, "RU": 2, "unknown": 0, "other": 1}}
    ]


def test_matched_counts_user_agents_holding_a_text_in_any_case():
    points = json.loads(trends().matched("SATOSHI", 10).body)
    assert [p.get("matched") for p in points] == [None, 4, 7]


def test_csv_by_network_leaves_cells_empty_where_nothing_was_counted():
    body = trends().csv("network", 10, None, 10).body.decode()
    assert body.split("\r\n") == [
        "timestamp,reachable,ipv4,ipv6,onion,i2p,cjdns",
        "100,5,,,,,",
        "200,6,4,2,0,0,0",
        "300,7,5,2,0,0,0",
        "",
    ]


def test_csv_by_value_neutralises_a_formula_in_a_heading():
    body = trends().csv("country", 10, None, 2).body.decode()
    assert body.split("\r\n")[:2] == [
        "timestamp,reachable,DE,RU,'=cmd,unknown,other",
        "200,6,1,3,0,2,0",
    ]


def test_csv_of_a_match():
    body = trends().csv(None, 10, "knots", 10).body.decode()
    assert body == "timestamp,reachable,matched\r\n100,5,\r\n200,6,2\r\n300,7,0\r\n"


def test_answers_are_kept_until_the_history_changes():
    made = trends()
    first = made.counts("country", 1, 10)
    assert made.counts("country", 1, 10) is first
    made.history.record(HistoryEntry(400, 1))
    assert made.counts("country", 1, 10) is not first
