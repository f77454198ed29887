"""crawl/decode.py: a crawl of any form decoded to nodes by canonical address, or refused
with the kind of its fault."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from crawldash.crawl.breakdown import networks_of
from crawldash.crawl.decode import (
    Rules,
    check_usable,
    decode_snapshot,
    decode_status,
    most_common_height,
    read_status,
    tally_networks,
)
from crawldash.crawl.files import LoadError
from crawldash.crawl.spellings import Spellings
from crawldash.models import ExportRow

from ..factories import ONION, api_body, row, write_status


def test_export_rows_are_keyed_canonically_the_later_row_winning():
    rows = [row("198.51.100.1"), row("198.51.100.1", height=5), row("2001:DB8::1")]
    snapshot = decode_snapshot(json.dumps(rows).encode(), 7)
    assert list(snapshot.nodes) == ["198.51.100.1:8333", "[2001:db8::1]:8333"]
    assert snapshot.nodes["198.51.100.1:8333"].height == 5
    assert (snapshot.timestamp, snapshot.latest_height, snapshot.skipped_rows) == (7, 900_000, 0)


def test_a_row_with_an_unusable_address_is_skipped_and_counted():
    rows = [row("198.51.100.1"), row("198.51.100.2", port=0), row("example.com")]
    snapshot = decode_snapshot(json.dumps(rows).encode(), 7)
    assert list(snapshot.nodes) == ["198.51.100.1:8333"]
    assert snapshot.skipped_rows == 2


def test_the_api_form_is_keyed_by_its_parsed_keys():
    node = row("unused")[2:]
    body = api_body(9, {"[2001:0DB8::1]:8333": node, "nonsense": node, f"{ONION}:9": node})
    snapshot = decode_snapshot(body, 9)
    assert sorted(snapshot.nodes) == ["[2001:db8::1]:8333", f"{ONION}:9"]
    assert snapshot.skipped_rows == 1


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"", "not_json"),
        (b"hello", "not_json"),
        (b"[]", "empty"),
        (b'{"nodes": {}}', "empty"),
        (b"[1", "decode"),
        (b"[" * 100_000, "decode"),
        (json.dumps([row("example.com")]).encode(), "no_usable_rows"),
    ],
    ids=["nothing", "text", "no-rows", "no-nodes", "cut", "deep", "no-usable-row"],
)
def test_what_cannot_be_served_is_refused_with_its_kind(data: bytes, kind: str):
    with pytest.raises(LoadError) as refused:
        decode_snapshot(data, 1)
    assert refused.value.kind == kind


def test_an_empty_crawl_is_served_when_allowed():
    snapshot = decode_snapshot(b"[]", 1, allow_empty=True)
    assert (snapshot.nodes, snapshot.latest_height) == ({}, 0)
    with pytest.raises(LoadError, match="none of its 3 rows"):
        check_usable(0, 3, allow_empty=True)


def test_most_common_height_prefers_the_higher_on_a_tie():
    assert most_common_height([5, 7, 7, 5, 1]) == 7
    assert most_common_height([]) == 0


def test_tally_networks_in_their_order():
    assert tally_networks(["onion", "ipv4", "ipv4", "cjdns"]) == (2, 0, 1, 0, 1)


def test_status_decodes_with_optional_fields(tmp_path: Path):
    status = decode_status(b'{"state": "running", "queue_size": 3, "extra": 1}')
    assert (status.state, status.queue_size, status.height) == ("running", 3, None)
    with pytest.raises(LoadError) as refused:
        decode_status(b'{"state": "running"}')
    assert refused.value.kind == "decode"
    path = write_status(tmp_path, height=5)
    assert read_status(path, Rules(max_file_size=1000)).height == 5


def test_rows_spelled_from_a_remembered_crawl_decode_as_rows_spelled_alone():
    # The loader spells a crawl from the hosts of the crawl before (Spellings): the same
    # nodes in the same order, and the same rows skipped, as each row spelled on its own.
    before = [row("198.51.100.1"), row("2001:DB8::1"), row(ONION.upper(), tor=True)]
    rows = [
        row("198.51.100.1"),  # known
        row("198.51.100.9"),  # new
        row("2001:db8::1"),  # known host, another spelling
        row("2001:DB8::1", height=5),  # the later row for it
        row("198.51.100.1", port=18333),  # known host, another port
        row("198.51.100.2", port=0),  # no such port
        row("example.com"),  # no address
        row("fc00::7"),
        row(ONION.upper(), tor=True),
    ]
    remembered = Spellings()
    remembered.addresses(decode_snapshot_rows(before))
    alone = decode_snapshot(json.dumps(rows).encode(), 7)
    spelled = decode_snapshot(json.dumps(rows).encode(), 7, spellings=remembered)
    assert list(spelled.nodes) == list(alone.nodes)
    assert spelled == replace(alone, networks=spelled.networks)
    assert spelled.skipped_rows == 2
    assert alone.networks is None
    assert spelled.networks == networks_of(alone.nodes)
    assert spelled.nodes["[2001:db8::1]:8333"].height == 5


def decode_snapshot_rows(rows: list[list[object]]) -> list[ExportRow]:
    return msgspec.json.decode(json.dumps(rows).encode(), type=list[ExportRow])
