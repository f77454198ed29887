"""crawl/breakdown.py: a crawl's nodes counted by network, country, provider, client,
protocol version, service bit and height against the consensus. (Named for an aspect:
``test_breakdowns`` is the served answers' test, and names a plural apart are refused.)"""

from __future__ import annotations

import json
from collections import Counter

import msgspec
import pytest

from crawldash.crawl.breakdown import (
    BY,
    breakdowns,
    consensus_of,
    height_band,
    host_of,
    networks_of,
    organisations,
    service_names,
    tally_crawl,
)
from crawldash.crawl.decode import Snapshot, decode_snapshot

from ..factories import ONION, row


def crawl() -> Snapshot:
    rows = [
        row("198.51.100.1"),
        row("198.51.100.2", height=899_999),
        row("2001:db8::1", agent="/Knots/"),
        row(ONION, tor=True, height=900_001),
    ]
    rows[2][9] = None  # no country
    return decode_snapshot(json.dumps(rows).encode(), 1_700_000_000)


def test_service_names_name_known_bits_and_number_the_rest():
    assert service_names(1033) == ["NETWORK", "WITNESS", "NETWORK_LIMITED"]
    assert service_names(1 | 1 << 20) == ["NETWORK", "BIT_20"]
    assert service_names(0) == []


@pytest.mark.parametrize(
    ("height", "band"),
    [
        (100, "consensus"),
        (101, "ahead"),
        (99, "behind_1_6"),
        (94, "behind_1_6"),
        (93, "behind_more"),
    ],
)
def test_height_bands(height: int, band: str):
    assert height_band(height, 100) == band


def test_host_of_strips_port_and_brackets():
    assert host_of("[2001:db8::1]:8333") == "2001:db8::1"
    assert host_of("198.51.100.1:8333") == "198.51.100.1"


def test_every_breakdown_of_a_small_crawl():
    snapshot = crawl()
    found = breakdowns(snapshot.nodes, snapshot.latest_height, networks_of(snapshot.nodes))
    assert list(found) == list(BY)
    assert found["network"] == [("ipv4", 2), ("ipv6", 1), ("onion", 1)]
    assert found["country"] == [("RU", 2), (None, 2)]  # a tie: no value comes last
    assert found["asn"] == [("AS12389", 3), ("TOR", 1)]
    assert found["user_agent"] == [("/Satoshi:27.0.0/", 3), ("/Knots/", 1)]
    assert found["version"] == [(70016, 4)]
    assert found["services"] == [("NETWORK", 4), ("NETWORK_LIMITED", 4), ("WITNESS", 4)]
    assert found["height"] == [("consensus", 2), ("ahead", 1), ("behind_1_6", 1)]


def test_a_node_without_services_counts_under_none():
    first, *others = crawl().nodes.values()
    _, counts = tally_crawl([msgspec.structs.replace(first, services=0), *others], 900_000)
    assert counts["services"] == Counter(
        {"NETWORK": 3, "WITNESS": 3, "NETWORK_LIMITED": 3, None: 1}
    )


def test_tally_crawl_finds_the_consensus_when_not_given():
    consensus, counts = tally_crawl(list(crawl().nodes.values()))
    assert consensus == 900_000
    assert counts["height"] == Counter({"consensus": 2, "ahead": 1, "behind_1_6": 1})


def test_consensus_is_the_most_common_height_the_higher_on_a_tie():
    assert consensus_of(Counter({5: 2, 7: 2, 9: 1})) == 7
    assert consensus_of(Counter({5: 3, 7: 2})) == 5
    assert consensus_of(Counter()) == 0


def test_organisations_take_the_most_common_spelling():
    snapshot = crawl()
    assert organisations(snapshot.nodes.values()) == {
        "AS12389": "Rostelecom",
        "TOR": "Tor network",
    }
