"""crawl/attempts.py: the bridge's kept crawl attempts: bitmaps kept whole or as the
difference from the crawl before, the file's round trip, and the exclusion rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyroaring import BitMap

from crawldash.crawl.attempts import (
    FORMAT,
    KEYFRAME_EVERY,
    CrawlAttempts,
    FullCrawl,
    KeptAttempts,
    Rules,
    crawl_attempts,
    decode_attempts,
    decode_crawls,
    encode_attempts,
    encode_crawls,
    pack_addresses,
    read_kept,
    unpack_addresses,
    write_attempts,
)

SPREAD = BitMap(range(0, 9000, 3))  # no runs: a difference of one is far smaller


def crawl(timestamp: int, extra: int) -> FullCrawl:
    return FullCrawl(timestamp, True, SPREAD | BitMap([9000 + extra]), BitMap([extra]), 0)


def test_crawls_after_the_first_are_kept_as_differences_and_rebuilt():
    crawls = [crawl(t, t) for t in range(3)]
    kept = list(encode_crawls(crawls))
    assert next((k.tried_whole, k.reached_whole) for k in kept) == (True, True)
    assert not kept[1].tried_whole
    assert not kept[2].tried_whole
    assert len(kept[1].tried) < len(kept[0].tried)
    assert list(decode_crawls(kept)) == crawls


def test_every_keyframe_is_kept_whole():
    kept = list(encode_crawls(crawl(t, 0) for t in range(KEYFRAME_EVERY + 1)))
    assert kept[KEYFRAME_EVERY].whole
    assert not kept[KEYFRAME_EVERY - 1].tried_whole


def test_a_difference_without_a_crawl_before_is_refused():
    kept = list(encode_crawls([crawl(0, 0), crawl(1, 1)]))
    with pytest.raises(ValueError, match="first crawl kept is not whole"):
        list(decode_crawls(kept[1:]))


def test_addresses_round_trip_and_garbage_is_a_value_error():
    assert unpack_addresses(pack_addresses(["a:1", "[::1]:2"])) == ["a:1", "[::1]:2"]
    assert unpack_addresses(pack_addresses([])) == []
    with pytest.raises(ValueError, match="unreadable"):
        unpack_addresses(b"not zlib")


def kept_file() -> KeptAttempts:
    addresses = ["198.51.100.1:8333", "198.51.100.2:8333", "[2001:db8::1]:8333"]
    crawls = [
        FullCrawl(100, True, BitMap([0, 1]), BitMap([0]), 0),
        FullCrawl(200, False, BitMap([0, 1, 2]), BitMap([2]), 1),
    ]
    rules = [Rules(), Rules(exclude_nodes=["198.51.100.1"])]
    return KeptAttempts(FORMAT, pack_addresses(addresses), list(encode_crawls(crawls)), rules)


def test_the_newest_crawl_not_after_a_timestamp(tmp_path: Path):
    assert read_kept(tmp_path) is None
    write_attempts(tmp_path, kept_file())
    kept = read_kept(tmp_path)
    assert kept is not None
    first = crawl_attempts(kept, 150)
    assert first == CrawlAttempts(
        100, True, frozenset({"198.51.100.1:8333", "198.51.100.2:8333"}),
        frozenset({"198.51.100.1:8333"}), Rules(),
    )  # fmt: skip
    second = crawl_attempts(kept, 10**9)
    assert second is not None
    assert second.reached == {"[2001:db8::1]:8333"}
    assert second.rules.exclude_nodes == ["198.51.100.1"]
    assert crawl_attempts(kept, 99) is None


def test_a_file_of_another_format_or_not_one_is_refused():
    other = kept_file()
    with pytest.raises(ValueError, match="attempts format 2"):
        decode_attempts(encode_attempts(KeptAttempts(2, other.addresses, [], [])))
    with pytest.raises(ValueError, match="not a kept attempts file"):
        decode_attempts(b"\x00\x01")


RULES = Rules(
    exclude_nodes=["198.51.100.7"],
    exclude_ipv4_networks=[(0x0A000000, 0xFF000000)],  # 10.0.0.0/8
    exclude_ipv6_networks=[(0xFD << 56, 0, 8)],  # fd00::/8, in 64-bit halves
)


@pytest.mark.parametrize(
    ("address", "rule"),
    [
        ("198.51.100.7:8333", "exclude-nodes"),
        ("10.1.2.3:8333", "10.0.0.0/8"),
        ("[fd12::1]:8333", "fd00::/8"),
        ("198.51.100.8:8333", None),
        ("[2001:db8::1]:8333", None),
        ("aaaa.onion:8333", None),
    ],
)
def test_excluded_by_names_the_rule(address: str, rule: str | None):
    attempts = CrawlAttempts(1, True, frozenset(), frozenset(), RULES)
    assert attempts.excluded_by(address) == rule
