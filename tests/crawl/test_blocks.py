"""crawl/blocks.py: a block's propagation statistics from its announcements."""

from __future__ import annotations

import pytest

from crawldash.crawl.blocks import from_announcements
from crawldash.crawl.propagation import CURVE_STEPS, HEAD_SIZE

HASH = "ab" * 32
MEMBERS = [b"198.51.100.1-8333", b"2001:DB8::1-8333", b"198.51.100.3-18333", b"198.51.100.4-8333"]
SCORES = [1000.0, 1100.0, 1300.0, 1600.0]


def test_delays_after_the_earliest_and_their_statistics():
    block = from_announcements(HASH, MEMBERS, SCORES)
    assert (block.hash, block.first_seen, block.nodes, block.max) == (HASH, 1000, 4, 600.0)
    assert block.mean == 250.0  # (0 + 100 + 300 + 600) / 4
    assert block.std == pytest.approx(229.1287847)  # population standard deviation
    assert block.p50 == 200.0  # halfway between 100 and 300
    assert block.p90 == pytest.approx(510.0)


def test_the_head_is_canonical_addresses_with_their_times():
    block = from_announcements(HASH, MEMBERS, SCORES)
    assert block.head == [
        ("198.51.100.1:8333", 1000),
        ("[2001:db8::1]:8333", 1100),
        ("198.51.100.3:18333", 1300),
        ("198.51.100.4:8333", 1600),
    ]


def test_the_curve_has_a_point_every_five_percent():
    curve = from_announcements(HASH, MEMBERS, SCORES).curve
    assert len(curve) == CURVE_STEPS + 1
    assert (curve[0], curve[10], curve[-1]) == (0, 200, 600)
    assert curve == sorted(curve)


def test_one_announcement_has_no_spread():
    block = from_announcements(HASH, [b"198.51.100.1-8333"], [5.0])
    assert (block.nodes, block.max, block.mean, block.std, block.p50, block.p90) == (
        1,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    )
    assert block.curve == [0] * (CURVE_STEPS + 1)


def test_the_head_keeps_only_the_first_announcers():
    count = HEAD_SIZE + 5
    members = [f"198.51.100.{i}-8333".encode() for i in range(1, count + 1)]
    block = from_announcements(HASH, members, [float(i) for i in range(count)])
    assert len(block.head) == HEAD_SIZE
    assert block.head[-1] == (f"198.51.100.{HEAD_SIZE}:8333", HEAD_SIZE - 1)
