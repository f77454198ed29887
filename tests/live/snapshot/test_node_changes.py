"""live/snapshot/node_changes.py: each node's changes found where a crawl is made, by the
same rule as the server's own comparison (live/answers/profiles.py), and sent with the
crawl only against a crawl before it."""

from __future__ import annotations

import json
from typing import Any

from crawldash.crawl.decode import decode_snapshot
from crawldash.crawl.files import FileVersion
from crawldash.live.answers.profiles import Profiles
from crawldash.live.snapshot.making import in_two
from crawldash.live.snapshot.node_changes import changes_since, known_of
from crawldash.live.snapshot.prepared import Half
from crawldash.models import Change

from ...factories import row
from ..answers.small import prepared

A, B, C, D = (f"198.51.100.{i}:8333" for i in range(1, 5))


def edited(address: str, **fields: Any) -> list[Any]:
    """A row with some of the fields compared set: index by name in the export form."""
    at = {"protocol_version": 2, "user_agent": 3, "services": 5, "country": 9, "asn": 13}
    cells = row(address.rpartition(":")[0])
    for name, value in fields.items():
        cells[at[name]] = value
    return cells


BEFORE = [
    edited(A),
    edited(B, user_agent="/Satoshi:27.0.0/"),
    edited(C, country="de", asn="as3320"),
    edited(D, country=None),
]
AFTER = [
    edited(A, user_agent="/Satoshi:28.0.0/", services=1037),  # two fields
    edited(B, user_agent="/SATOSHI:27.0.0/"),  # letter case alone: not a change
    edited(C, country="DE", asn="AS3320", protocol_version=70015),  # case, with a change
    edited(D, country="US"),
    edited("198.51.100.5:8333"),  # new: nothing to compare with
]


def loader_found(before: list[list[Any]], after: list[list[Any]]) -> list[tuple[str, Change]]:
    old = decode_snapshot(json.dumps(before).encode(), 100)
    new = decode_snapshot(json.dumps(after).encode(), 200)
    known = known_of(100, FileVersion(1, 100), old.nodes)
    addresses = sorted(new.nodes)
    return changes_since(known, 200, addresses, map(new.nodes.__getitem__, addresses)).found


def test_the_loader_finds_what_the_server_would():
    found = loader_found(BEFORE, AFTER)
    assert found == Profiles().compare(prepared(100, BEFORE), prepared(200, AFTER))
    assert found == [
        (A, Change(200, "user_agent", "/Satoshi:27.0.0/", "/Satoshi:28.0.0/")),
        (A, Change(200, "services", 1033, 1037)),
        (C, Change(200, "protocol_version", 70016, 70015)),
        (C, Change(200, "country", "de", "DE")),  # as sent, once the node changed
        (C, Change(200, "asn", "as3320", "AS3320")),
        (D, Change(200, "country", None, "US")),
    ]


def test_the_changes_go_ahead_with_the_crawl_and_name_the_crawl_before():
    old = decode_snapshot(json.dumps(BEFORE).encode(), 100)
    known = known_of(100, FileVersion(7, 100), old.nodes)
    sent: list[object] = []
    new = decode_snapshot(json.dumps(AFTER).encode(), 200)
    in_two(new, FileVersion(8, 200), sent.append, cores=1, known=known)
    (half,) = sent
    assert isinstance(half, Half)
    assert half.changes is not None
    assert (half.changes.since, half.changes.version) == (100, FileVersion(7, 100))
    assert half.changes.found == loader_found(BEFORE, AFTER)
    assert Half.joined([half]) is not None  # the whole crawl, in one Half


def test_no_changes_are_sent_against_a_crawl_not_before_it():
    new = decode_snapshot(json.dumps(AFTER).encode(), 200)
    sent: list[object] = []
    in_two(
        new,
        FileVersion(8, 200),
        sent.append,
        cores=1,
        known=known_of(200, FileVersion(8, 200), new.nodes),
    )
    in_two(new, FileVersion(8, 200), sent.append, cores=1)
    assert [half.changes for half in sent if isinstance(half, Half)] == [None, None]
