"""live/answers/unique.py: distinct nodes over a window of crawls ending at the newest."""

from __future__ import annotations

import json

from crawldash.live.answers.unique import UniqueCounts, unique
from crawldash.live.stores.presence import Presence
from crawldash.models import UniqueBody

from .small import presence_of

PRESENCE = {100: ["a", "b"], 700: ["b", "c"], 1300: ["c", "d"]}


def test_the_window_ends_at_the_newest_crawl():
    presence = presence_of(PRESENCE)
    assert unique(presence, 600) == UniqueBody(600, 1300, 1300, 1, 2)
    assert unique(presence, 601) == UniqueBody(601, 700, 1300, 2, 3)
    assert unique(presence, 10_000) == UniqueBody(10_000, 100, 1300, 3, 4)


def test_no_crawl_known_counts_nothing():
    assert unique(Presence(), 600) == UniqueBody(600, None, None, 0, 0)


def test_answers_are_kept_until_the_presence_changes():
    counts = UniqueCounts(presence_of(PRESENCE))
    first = counts.body(601)
    assert counts.body(601) is first
    assert json.loads(first.body) == {
        "window": 601,
        "from": 700,
        "to": 1300,
        "crawls": 2,
        "unique": 3,
    }
    counts.presence.add(1900, ["e"])
    again = json.loads(counts.body(601).body)
    assert (again["from"], again["crawls"], again["unique"]) == (1300, 2, 3)  # c, d and e
