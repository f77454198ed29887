"""live/stores/presence.py: which addresses each crawl had, as bitmaps over crawl slots."""

from __future__ import annotations

from crawldash.live.stores.presence import Presence, Summary
from crawldash.models import PresenceRun


def sample() -> Presence:
    """Four crawls, given out of order: ``a`` in 100, 300 and 400; ``b`` in 100, 200, 400."""
    presence = Presence()
    presence.add(100, ["a", "b"])
    presence.add(300, ["a"])
    presence.add(200, ["b"])  # between two known crawls: the slots after it shift
    presence.add(400, ["a", "b"])
    return presence


def test_crawls_are_kept_in_time_order_whatever_the_order_given():
    presence = sample()
    assert presence.timestamps() == [100, 200, 300, 400]
    assert (presence.oldest(), presence.newest(), len(presence)) == (100, 400, 4)
    assert presence.has(200)
    assert not presence.has(250)


def test_summary_of_a_known_and_an_unknown_address():
    presence = sample()
    assert presence.summary("a") == Summary(4, 3, 100, 400)
    assert presence.summary("b") == Summary(4, 3, 100, 400)
    assert presence.summary("nobody") == Summary(4, 0, None, None)


def test_runs_of_presence_and_absence():
    presence = sample()
    assert presence.runs("a", 10) == [
        PresenceRun(100, 100, True, 1),
        PresenceRun(200, 200, False, 1),
        PresenceRun(300, 400, True, 2),
    ]
    assert presence.runs("a", 2) == [PresenceRun(300, 400, True, 2)]
    assert presence.runs("nobody", 2) == [PresenceRun(300, 400, False, 2)]
    assert Presence().runs("a", 5) == []


def test_crawls_at_or_before_and_before():
    presence = sample()
    assert presence.at_or_before(250) == 200
    assert presence.at_or_before(300) == 300
    assert presence.before(300) == 200
    assert presence.before(100) is None
    assert presence.at_or_before(99) is None


def test_adding_a_known_crawl_again_replaces_its_membership():
    presence = sample()
    rewritten = presence.rewritten
    presence.add(300, ["b"])
    assert presence.summary("a") == Summary(4, 2, 100, 400)
    assert presence.summary("b") == Summary(4, 4, 100, 400)
    assert presence.rewritten == rewritten + 1


def test_retain_forgets_the_oldest_and_one_in_the_middle():
    presence = sample()
    presence.retain(lambda t: t != 100)
    assert presence.timestamps() == [200, 300, 400]
    assert presence.summary("a") == Summary(3, 2, 300, 400)
    presence.retain(lambda t: t != 300)
    assert presence.timestamps() == [200, 400]
    assert presence.runs("a", 5) == [
        PresenceRun(200, 200, False, 1),
        PresenceRun(400, 400, True, 1),
    ]


def test_strip_removes_addresses_in_no_crawl_held():
    presence = sample()
    presence.add(500, ["c"])
    presence.retain(lambda t: t >= 500)
    presence.strip()
    assert set(presence.parts()[2]) == {"c"}


async def test_update_publishes_a_newer_and_an_older_crawl():
    presence = Presence()
    told: list[int] = []
    await presence.update(600, ["x", "y"], keep=lambda t: True, published=lambda: told.append(1))
    await presence.update(500, ["x"], keep=lambda t: True)
    await presence.update(700, ["y"], keep=lambda t: t > 500)
    assert told == [1]
    assert presence.timestamps() == [600, 700]
    assert presence.summary("x") == Summary(2, 1, 600, 600)
    assert presence.summary("y") == Summary(2, 2, 600, 700)


async def test_add_older_refuses_a_stale_top():
    presence = sample()
    top = presence.next_older_slot()
    presence.add(50, ["a"])
    assert not await presence.add_older(top, [40], [("a", top, top + 1)], keep=lambda t: True)
    assert presence.timestamps()[0] == 50
