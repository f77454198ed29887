"""live/answers/profiles.py: each node's changes between crawls served one after another.
(Named for an aspect: ``test_profiles`` would be a plural apart from tests/test_profile.py,
which tests/test_names.py refuses.)"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from array import array

from crawldash.live.answers.profiles import MAX_PER_NODE, Profiles
from crawldash.models import Change

from ...factories import row
from .small import prepared

A, B = "198.51.100.1:8333", "198.51.100.2:8333"


def test_only_the_fields_that_changed_are_found():
    before = prepared(100, [row("198.51.100.1"), row("198.51.100.2"), row("198.51.100.4")])
    changed = row("198.51.100.1", agent="/Satoshi:28.0.0/", height=1)  # height is not kept
    changed[9] = "DE"
    after = prepared(200, [changed, row("198.51.100.2"), row("198.51.100.3")])
    assert Profiles().compare(before, after) == [
        (A, Change(200, "user_agent", "/Satoshi:27.0.0/", "/Satoshi:28.0.0/")),
        (A, Change(200, "country", "RU", "DE")),
    ]


def test_fingerprints_of_another_process_find_the_same_changes():
    # Each loader process hashes with a seed of its own: after a new one, every node's
    # fingerprint differs from the crawl before's, and what is found must not change.
    gone = row("198.51.100.0")  # in the crawl before only: the nodes' positions differ
    cased = row("198.51.100.3", agent="/satoshi:27.0.0/")  # letter case is no change
    before = prepared(
        100, [gone, row("198.51.100.1"), row("198.51.100.2", agent="/Knots:1/"), row(cased[0])]
    )
    after = prepared(
        200, [row("198.51.100.1", height=7), row("198.51.100.2", agent="/Knots:2/"), cased]
    )
    found = Profiles().compare(before, after)
    assert found == [(B, Change(200, "user_agent", "/Knots:1/", "/Knots:2/"))]
    other_seed = array("q", (f + 1 for f in before.catalog.fingerprints))
    catalog = dataclasses.replace(before.catalog, fingerprints=other_seed)
    assert Profiles().compare(dataclasses.replace(before, catalog=catalog), after) == found


def test_numbers_that_hash_alike_are_told_apart():
    # A number's hash wraps (hash(1) == hash(2**61), hash(-1) == hash(-2)), and a node
    # sends what services it likes.
    before, after = row("198.51.100.1"), row("198.51.100.1")
    before[5], after[5] = 1, 2**61
    found = Profiles().compare(prepared(100, [before]), prepared(200, [after]))
    assert found == [(A, Change(200, "services", 1, 2**61))]


def test_bodies_list_the_newest_change_first():
    profiles = Profiles()
    profiles.take(100, [(A, Change(200, "country", "RU", "DE"))])
    profiles.take(200, [(A, Change(300, "country", "DE", "FR"))])
    answer = json.loads(profiles.body(A))
    assert answer["since"] == 100  # the first crawl compared from
    assert [c["to"] for c in answer["changes"]] == ["FR", "DE"]
    assert json.loads(profiles.body(B)) == {"address": B, "since": 100, "changes": []}
    assert profiles.version == 2


def test_a_node_keeps_only_its_newest_changes():
    profiles = Profiles()
    for crawl in range(MAX_PER_NODE + 3):
        profiles.take(0, [(A, Change(crawl, "services", crawl, crawl + 1))])
    changes = json.loads(profiles.body(A))["changes"]
    assert len(changes) == MAX_PER_NODE
    assert changes[0]["crawl"] == MAX_PER_NODE + 2


async def test_from_a_switch_answers_wait_for_the_crawls_changes():
    profiles = Profiles()
    profiles.expect()  # a crawl is served, its changes not yet in
    waiting = asyncio.ensure_future(profiles.settled())
    await asyncio.sleep(0)
    assert not waiting.done()
    profiles.take(100, [(A, Change(200, "country", "RU", "DE"))])
    await asyncio.wait_for(waiting, 60)
    assert json.loads(profiles.body(A))["changes"][0]["crawl"] == 200
    profiles.expect()
    profiles.settle()  # none to wait for: what is kept is the answer
    await asyncio.wait_for(profiles.settled(), 60)
