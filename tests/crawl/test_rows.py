"""crawl/rows.py: a crawl's rows decoded so that one bad row costs only itself."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from crawldash.crawl.rows import UINT64_MAX, CrawlRow, RowsDecoder, decode_keyed, overflows
from crawldash.models import ApiSnapshot, NodeRow

from ..factories import api_body, row

SERVICES, HEIGHT = 5, 6  # an export row's fields
decoder = RowsDecoder()


def strict(data: bytes) -> dict[str, NodeRow]:
    """The whole API object's decode, as the loader tries it first."""
    return msgspec.json.decode(data, type=ApiSnapshot).nodes


def two_rows() -> list[list[Any]]:
    return [row("198.51.100.1"), row("198.51.100.2")]


def addresses(data: bytes) -> tuple[int, list[str]]:
    decoded = decoder.decode(data)
    return decoded.bad, [each.address for each in decoded.rows]


def test_services_of_the_largest_uint64_keep_the_row():
    rows = two_rows()
    rows[1][SERVICES] = UINT64_MAX
    decoded = decoder.decode(json.dumps(rows).encode())
    assert decoded.bad == 0
    assert [each.services for each in decoded.rows] == [1033, UINT64_MAX]


def test_services_beyond_a_uint64_cost_only_that_row():
    rows = two_rows()
    rows[1][SERVICES] = UINT64_MAX + 1
    assert addresses(json.dumps(rows).encode()) == (1, ["198.51.100.1"])


@pytest.mark.parametrize(
    ("field", "value"),
    [(HEIGHT, "tall"), (HEIGHT, 2**31), (SERVICES, -1), (1, "port")],
    ids=["height-text", "height-beyond-int32", "negative-services", "port-text"],
)
def test_a_value_out_of_its_range_costs_only_that_row(field: int, value: object):
    rows = two_rows()
    rows[0][field] = value
    assert addresses(json.dumps(rows).encode()) == (1, ["198.51.100.2"])


def test_crawl_only_rows_decode_with_null_node_fields():
    body = json.dumps([["198.51.100.1", 8333, 1033, 900_000], ["198.51.100.2", 8333, 9, 0]])
    decoded = decoder.decode(body.encode())
    assert decoded.bad == 0
    assert decoded.rows == [
        CrawlRow("198.51.100.1", 8333, 1033, 900_000),
        CrawlRow("198.51.100.2", 8333, 9, 0),
    ]
    node = decoded.rows[1].node()
    assert (node.services, node.height, node.user_agent, node.country) == (9, 0, None, None)


def test_the_form_most_rows_have_wins_and_the_other_rows_are_skipped():
    body = json.dumps([row("198.51.100.1"), row("198.51.100.2"), ["198.51.100.3", 8333, 1, 5]])
    assert addresses(body.encode()) == (1, ["198.51.100.1", "198.51.100.2"])


def test_nan_in_a_nullable_field_becomes_null():
    body = json.dumps(two_rows()).replace('"host.example.net"', "NaN", 1).encode()
    decoded = decoder.decode(body)
    assert decoded.bad == 0
    assert [each.hostname for each in decoded.rows] == [None, "host.example.net"]


@pytest.mark.parametrize("spelled", ["NaN", "Infinity", "1e400"])
def test_a_non_finite_latitude_costs_that_row(spelled: str):
    body = json.dumps(two_rows()).replace("59.8983", spelled, 1).encode()
    assert addresses(body) == (1, ["198.51.100.2"])


def test_no_usable_row_is_a_validation_error_naming_both_forms():
    with pytest.raises(msgspec.ValidationError, match=r"as export rows: .*as crawl-only rows"):
        decoder.decode(b"[1, 2]")


def test_a_file_cut_short_is_a_decode_error():
    with pytest.raises(msgspec.DecodeError, match="truncated"):
        decoder.decode(json.dumps(two_rows()).encode()[:-20])


def test_an_empty_array_has_no_rows_and_none_bad():
    assert decoder.decode(b"[]") == ([], 0)


def test_overflows_looks_at_services_only():
    assert not overflows([CrawlRow("a", 1, UINT64_MAX, 2**31 - 1)])
    assert overflows([CrawlRow("a", 1, 0, 0), CrawlRow("b", 1, UINT64_MAX + 1, 0)])
    assert not overflows([])


def api_nodes() -> dict[str, list[Any]]:
    node = row("unused")[2:]
    return {"198.51.100.1:8333": list(node), "198.51.100.2:8333": list(node)}


@pytest.mark.parametrize("bad", [UINT64_MAX + 1, "many"], ids=["overflow", "text"])
def test_an_api_node_with_bad_services_costs_only_that_node(bad: object):
    nodes = api_nodes()
    nodes["198.51.100.2:8333"][3] = bad
    keyed = decode_keyed(api_body(1_700_000_000, nodes), strict)
    assert (keyed.bad, list(keyed.nodes)) == (1, ["198.51.100.1:8333"])


def test_api_nodes_all_good_are_decoded_whole():
    keyed = decode_keyed(api_body(1_700_000_000, api_nodes()), strict)
    assert keyed.bad == 0
    assert keyed.nodes["198.51.100.2:8333"].height == 900_000


def test_an_api_object_without_a_nodes_object_is_refused():
    with pytest.raises(msgspec.ValidationError, match=r"\$\.nodes"):
        decode_keyed(b'{"nodes": 3}', strict)
