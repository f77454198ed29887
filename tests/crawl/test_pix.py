"""crawl/pix.py: bitnodes' Peer Index, index by index, from a small crawl's figures."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from crawldash.crawl.pix import (
    INDEXES,
    CrawlFigures,
    Inputs,
    asn_index,
    indexes,
    latency_index,
    peer_index,
    ranks,
    row_json,
    share,
    usual,
    window_means,
)
from crawldash.crawl.propagation import pack

FIGURES = CrawlFigures.of(
    versions=[70016, 70016, 70015, None],
    services=[1033, 1033, 9, 1032],
    asns=["AS1", "AS1", "AS2", None],
    ports=[8333, 8333, 8333, 18333],
    consensus=900_000,
)


def node(**changes: object) -> Inputs:
    fields: dict[str, object] = {
        "version": 70016,
        "services": 1033,
        "height": 900_000,
        "asn": "AS2",
        "port": 8333,
        "latency": (250.0, 450.0, None),
        "uptime": ((144, 144), (504, 1008), (0, 0)),
    }
    fields.update(changes)
    return Inputs(**fields)  # type: ignore[arg-type]


def test_ranks_are_dense_the_most_common_first():
    assert ranks(Counter({"a": 5, "b": 5, "c": 2, "d": 1})) == {"a": 1, "b": 1, "c": 2, "d": 3}
    assert ranks(Counter()) == {}


def test_the_usual_port_is_the_most_common_the_lower_on_a_tie():
    assert usual(Counter({18333: 3, 8333: 3, 1: 1})) == 8333
    assert usual(Counter()) == 0


def test_crawl_figures_count_each_reachable_node():
    assert FIGURES.version_ranks == {70016: 1, 70015: 2}
    assert FIGURES.services_ranks == {1033: 1, 9: 2, 1032: 2}
    assert FIGURES.asns == Counter({"AS1": 2, "AS2": 1})
    assert (FIGURES.reachable, FIGURES.port) == (4, 8333)


@pytest.mark.parametrize(
    ("mean_ms", "index"),
    [
        (None, 0.0),
        (0, 1.0),
        (300, 1.0),
        (300.1, 0.9),
        (400, 0.9),
        (401, 0.8),
        (1200, 0.1),
        (1201, 0.0),
        (5000, 0.0),
    ],
)
def test_latency_tiers_of_100_ms(mean_ms: float | None, index: float):
    assert latency_index(mean_ms) == index


def test_share_of_ticks():
    assert share((3, 4)) == 0.75
    assert share((0, 0)) == 0.0


def test_asn_index_is_log_of_the_asns_share():
    assert asn_index("AS1", FIGURES) == pytest.approx(0.5)  # ln(4/2) / ln(4)
    assert asn_index("AS2", FIGURES) == pytest.approx(1.0)
    assert asn_index(None, FIGURES) == 0.0
    assert asn_index("AS9", FIGURES) == 0.0


def test_every_index_of_one_node():
    values = indexes(node(), FIGURES)
    assert dict(zip(INDEXES, values, strict=True)) == {
        "vi": 1.0,
        "si": 1.0,
        "hi": 1.0,
        "ai": pytest.approx(1.0),
        "pi": 1.0,
        "dli": 1.0,
        "dui": 1.0,
        "wli": 0.8,
        "wui": 0.5,
        "mli": 0.0,
        "mui": 0.0,
        "nsi": 0.0,
        "ni": 0.0,
        "bi": 0.0,
    }
    assert peer_index(values) == pytest.approx(83 / 14)


def test_a_node_without_node_network_has_no_services_index():
    assert indexes(node(services=1032), FIGURES)[1] == 0.0
    assert indexes(node(services=9), FIGURES)[1] == 0.5


def test_height_index_is_capped_and_unknown_version_is_zero():
    values = indexes(node(height=950_000, version=None, port=18333), FIGURES)
    assert (values[0], values[2], values[4]) == (0.0, 1.0, 0.0)
    assert indexes(node(height=450_000), FIGURES)[2] == 0.5


def test_window_means_weigh_every_kept_time_alike():
    cells = pack({1000: (2, 200), 999: (1, 400), 990: (1, 1000), 100: (1, 5)})
    assert window_means(cells, as_of=1000) == (400.0, 321.0, 321.0)
    assert window_means(b"", as_of=1000) == (None, None, None)


def test_row_json_shows_four_decimals_and_the_rank():
    values = indexes(node(), FIGURES)
    row = json.loads(row_json("198.51.100.1:8333", values, peer_index(values), 3, "/ua/", None))
    assert row["node"] == "198.51.100.1:8333"
    assert (row["wli"], row["wui"], row["peer_index"]) == ("0.8000", "0.5000", "5.9286")
    assert (row["rank"], row["user_agent"], row["country"]) == (3, "/ua/", None)
    assert list(row)[1:15] == list(INDEXES)
