"""live/stores/tallies.py: crawls' counts by value packed into codes of one shared table."""

from __future__ import annotations

import pytest

from crawldash.live.stores.tallies import KEPT, KEYS, UNKNOWN, Values, counts_of, unpacked

COUNTRY, VERSION, AGENT = KEYS.index("country"), KEYS.index("version"), KEYS.index("user_agent")


def test_pack_codes_values_from_one_and_none_as_unknown():
    values = Values()
    packed = values.pack({"country": [("RU", 3), (None, 1)], "version": [(70016, 4)]})
    assert values.copy() == [["RU"], [], [], ["70016"], [], []]
    assert counts_of(packed, COUNTRY) == {1: 3, UNKNOWN: 1}
    assert counts_of(packed, VERSION) == {1: 4}
    assert counts_of(packed, AGENT) == {}
    assert unpacked(packed).tolist() == [2, 1, 3, 0, 1, 0, 0, 1, 1, 4, 0, 0]


def test_codes_are_shared_by_every_crawl():
    values = Values()
    values.pack({"country": [("RU", 3)]})
    second = values.pack({"country": [("DE", 2), ("RU", 1)]})
    assert counts_of(second, COUNTRY) == {2: 2, 1: 1}
    assert (values.name(COUNTRY, 1), values.name(COUNTRY, 2)) == ("RU", "DE")


def test_numbers_past_two_bytes_widen_the_array():
    packed = Values().pack({"country": [("DE", 70_000)]})
    assert packed[:1] == b"I"
    assert counts_of(packed, COUNTRY) == {1: 70_000}


def test_only_the_most_common_values_are_kept_but_every_user_agent():
    many = [(f"v{i}", i + 1) for i in range(KEPT + 10)]
    values = Values()
    packed = values.pack({"asn": many, "user_agent": many})
    asns = counts_of(packed, KEYS.index("asn"))
    assert len(asns) == KEPT
    assert min(asns.values()) == 11  # the ten with fewest nodes are left out
    assert len(counts_of(packed, AGENT)) == KEPT + 10


def test_matching_finds_user_agents_in_any_case():
    values = Values()
    values.pack({"user_agent": [("/Satoshi:27.0.0/", 1), ("/Knots:1/", 1), ("/satoshi:26/", 1)]})
    assert values.matching("SATOSHI") == {1, 3}
    assert values.matching("btcd") == frozenset()


def test_a_table_restored_from_an_index_keeps_its_codes():
    values = Values()
    packed = values.pack({"country": [("RU", 3)]})
    again = Values(values.copy())
    again.check(packed)
    assert again.pack({"country": [("RU", 1)]}) == Values(values.copy()).pack(
        {"country": [("RU", 1)]}
    )


@pytest.mark.parametrize(
    ("names", "reason"),
    [([["a", "a"], [], [], [], [], []], "listed twice"), ([[]], "values of 1 keys")],
)
def test_a_broken_table_is_refused(names: list[list[str]], reason: str):
    with pytest.raises(ValueError, match=reason):
        Values(names)


def test_check_refuses_counts_the_table_does_not_name():
    values = Values()
    packed = Values().pack({"country": [("RU", 3)]})  # code 1, which ``values`` lacks
    with pytest.raises(ValueError, match="does not name"):
        values.check(packed)
    with pytest.raises(ValueError, match="unknown width"):
        values.check(b"Q\x00\x00")
    with pytest.raises(ValueError, match="fewer keys"):
        values.check(b"H\x00\x00")
    with pytest.raises(ValueError, match="more keys"):
        values.check(Values().pack({}) + b"\x00\x00")
