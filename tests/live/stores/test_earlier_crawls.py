"""live/stores/earlier_crawls.py: older crawls added to the presence in bulk, newest first,
each address's stretch of crawls as one range."""

from __future__ import annotations

from crawldash.crawl.count import AddressChanges
from crawldash.live.stores.earlier_crawls import OlderCrawls
from crawldash.live.stores.presence import Presence, Summary
from crawldash.models import PresenceRun


def known() -> Presence:
    presence = Presence()
    presence.add(600, ["y"])
    return presence


async def test_older_crawls_are_published_together():
    presence = known()
    older = OlderCrawls(presence)
    assert older.takes(590)
    assert not older.takes(600)
    older.add(590, {"y", "z"})
    older.add(580, {"z"})
    assert not older.takes(585)  # only older than the last given
    assert len(older) == 2
    assert presence.timestamps() == [600]
    assert await older.publish(keep=lambda t: True)
    assert presence.timestamps() == [580, 590, 600]
    assert presence.summary("z") == Summary(3, 2, 580, 590)
    assert presence.runs("y", 3) == [
        PresenceRun(580, 580, False, 1),
        PresenceRun(590, 600, True, 2),
    ]


async def test_changes_given_spare_the_comparison():
    presence = known()
    older = OlderCrawls(presence)
    older.add(590, ["a", "b"])
    older.add(580, ["b"], AddressChanges(added=[], removed=["a"]))
    assert await older.publish(keep=lambda t: t > 580)
    assert presence.timestamps() == [590, 600]
    assert presence.summary("a") == Summary(2, 1, 590, 590)
    assert presence.summary("b") == Summary(2, 1, 590, 590)


async def test_publish_fails_if_the_presence_took_an_older_crawl_meanwhile():
    presence = known()
    older = OlderCrawls(presence)
    older.add(590, {"a"})
    presence.add(500, ["q"])
    assert not await older.publish(keep=lambda t: True)
    assert presence.timestamps() == [500, 600]
