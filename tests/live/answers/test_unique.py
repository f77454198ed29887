"""live/answers/unique.py: distinct nodes over a window of crawls ending at the newest."""

from __future__ import annotations

import asyncio
import json

from crawldash.live.answers.unique import UniqueCounts, unique
from crawldash.live.stores.presence import SLICE, Presence
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


async def test_a_crawl_being_added_counts_only_once_published():
    # The presence sets a new crawl's bits in slices, yielding between them: answers made
    # meanwhile (their newest slots too, which later windows reuse) leave it out.
    presence = presence_of(PRESENCE)
    counts = UniqueCounts(presence)
    newcomers = [f"n{i}" for i in range(3 * SLICE)]  # in no crawl before
    adding = asyncio.ensure_future(presence.update(1900, ["d", *newcomers], lambda _: True))
    await asyncio.sleep(0)  # one slice set, the crawl not published
    assert not adding.done()
    during = [json.loads(counts.body(601).body)["unique"]]  # its newest slots read now
    await asyncio.sleep(0)  # another slice set: the slots read before are still right
    assert not adding.done()
    during.append(json.loads(counts.body(10_000).body)["unique"])
    assert during == [3, 4]  # b, c, d; a, b, c, d
    await asyncio.wait_for(adding, 60)
    after = [json.loads(counts.body(window).body)["unique"] for window in (601, 10_000)]
    assert after == [2 + 3 * SLICE, 4 + 3 * SLICE]  # c, d and the newcomers; all
