"""A run of consecutive crawls counted in one process: each count after the first, sent as
the changes of its addresses, has the nodes per network of the crawl counted whole, as
networks come and go, and when the process's memory of spellings starts again between two
crawls of the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawldash.crawl import spellings
from crawldash.crawl.count import CrawlCount, count_nodes, read_counts
from crawldash.crawl.decode import Rules

from .factories import I2P, ONION, row, rows
from .helpers import write_crawls

TS = 1_700_000_000


def crawl_rows(index: int) -> list[list[object]]:
    """IPv4 nodes that churn, and an onion, an I2P, an IPv6 and a cjdns node that come and go."""
    others = [
        row(ONION, tor=True),
        row(I2P, tor=True),
        row("2001:DB8::7"),
        row("fc00::7"),
    ]
    return [*rows(6 + index)[index:], *others[index % 3 : index % 3 + 2]]


@pytest.mark.parametrize("known_max", [spellings.KNOWN_MAX, 4])
def test_a_run_has_the_networks_of_each_crawl_counted_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, known_max: int
):
    monkeypatch.setattr(spellings, "KNOWN_MAX", known_max)
    paths = write_crawls(tmp_path, crawl_rows, 6, TS)
    counted = read_counts(paths, Rules(10**7))
    for path, run_count in zip(paths, counted, strict=True):
        assert isinstance(run_count, CrawlCount)
        whole = count_nodes(path.read_bytes())
        assert run_count.networks == whole.networks
        assert (run_count.nodes, run_count.tallies) == (whole.nodes, whole.tallies)
    assert [c.changes is None for c in counted] == [True] + [False] * 5  # type: ignore[union-attr]
