"""live/answers/changes.py: which nodes joined and left between two crawls."""

from __future__ import annotations

import json

from crawldash.live.answers.changes import Changes, differences

from .small import presence_of

A, B, C = "198.51.100.1:8333", "[2001:db8::1]:8333", "198.51.100.3:8333"


def crawls() -> Changes:
    return Changes(presence_of({100: [A, B], 200: [A, C], 300: [C]}))


def test_differences_are_sorted_joined_and_left():
    presence = presence_of({100: [A, B], 200: [A, C]})
    assert differences(presence, 100, 200) == ([C], [B])
    assert differences(presence, 200, 100) == ([B], [C])


def test_the_latest_against_the_crawl_before_it_by_network():
    answer = json.loads(crawls().body(200) or b"")
    assert (answer["joined"], answer["left"]) == ([C], [B])
    assert (answer["joined_count"], answer["left_count"]) == (1, 1)
    assert answer["by_network"]["ipv4"] == {"joined": 1, "left": 0}
    assert answer["by_network"]["ipv6"] == {"joined": 0, "left": 1}


def test_since_picks_the_latest_crawl_at_or_before_it():
    changes = crawls()
    answer = json.loads(changes.body(300, since=150) or b"")
    assert (answer["from"], answer["to"]) == (100, 300)
    assert (answer["joined"], answer["left"]) == ([C], [A, B])
    assert changes.body(300, since=50) is None


def test_the_first_crawl_has_nothing_to_compare_with():
    answer = json.loads(crawls().body(100) or b"")
    assert (answer["from"], answer["joined"], answer["left"]) == (None, [], [])


def test_an_answer_is_made_again_once_a_crawl_is_rewritten():
    changes = crawls()
    before = changes.body(200)
    assert changes.body(200) is before  # kept
    changes.presence.add(200, [A])
    assert json.loads(changes.body(200) or b"")["joined"] == []
