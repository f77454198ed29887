"""live/answers/unique.py: distinct nodes over a window of crawls ending at the newest."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from crawldash.live.answers.unique import NewestSlots, UniqueCounts, unique
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


async def test_slots_read_before_a_crawl_is_published_answer_after_it():
    # The switch reads each address's newest slot once the crawl's bits are set: the first
    # answers after it, the oldest crawl forgotten meanwhile, count without reading again.
    presence = presence_of(PRESENCE)
    counts = UniqueCounts(presence)
    await presence.update(1900, ["d", "e"], lambda t: t > 100, ready=counts.prepare)
    assert presence.timestamps() == [700, 1300, 1900]

    def read_again(_presence: Presence) -> NewestSlots:
        raise AssertionError("read every address's newest slot again")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(NewestSlots, "of", read_again)
        answers = [json.loads(counts.body(w).body)["unique"] for w in (600, 1200, 10_000)]
    assert answers == [2, 3, 4]  # d, e; c, d, e; b, c, d, e (100, with a, forgotten)


async def test_kept_slots_follow_every_change_of_the_members():
    # Every way the presence changes, at random: each answer equals one counted afresh.
    rng = random.Random(55)
    presence = presence_of(PRESENCE)
    counts = UniqueCounts(presence)
    pool = [f"n{i}" for i in range(40)]
    for step in range(300):
        stamps = presence.timestamps()
        choice = rng.randrange(6)
        members = rng.sample(pool, rng.randrange(1, 12))
        if choice == 0 or not stamps:  # newest, the oldest maybe forgotten
            low = rng.choice([0, stamps[0] if stamps else 0])
            await presence.update(
                (stamps[-1] if stamps else 0) + 600, members, low.__lt__, ready=counts.prepare
            )
        elif choice == 1:  # older than all
            await presence.update(stamps[0] - 600, members, lambda _: True)
        elif choice == 2:  # older than all, as the counting of older crawls adds them
            top = presence.next_older_slot()
            ranges = [(address, top, top + 1) for address in members]
            await presence.add_older(top, [stamps[0] - 300], ranges, lambda _: True)
        elif choice == 3 and len(stamps) > 2:  # between two, or one known again
            between = rng.randrange(stamps[0] + 1, stamps[-1])
            presence.add(between, members)
        elif choice == 4 and len(stamps) > 2:  # one in the middle forgotten
            dropped = rng.choice(stamps[1:-1])
            presence.retain(dropped.__ne__)
        else:
            presence.strip()
        for window in (600, 1800, 7200, 10**6):
            made = json.loads(counts.body(window).body)
            fresh = unique(presence, window)
            assert (made["crawls"], made["unique"]) == (fresh.crawls, fresh.unique), step
