"""The benchmark's crawl files have a real bitnodes export's shape: rows in a fresh order
each crawl, about half of them onion addresses at 0.0, 0.0, a long tail of user agents and
ASNs, and the export's 15 fields; and the history on disk links many distinct files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench.data import real_size_history
from bench.export_shape import shaped_crawls

NODES = 3000


@pytest.fixture(scope="module")
def crawls() -> list[list[list[object]]]:
    made = shaped_crawls(nodes=NODES, crawls=3, end=1_790_000_000, seed=2)
    return [json.loads(crawl.body()) for crawl in made]


def test_each_crawl_lists_its_nodes_in_a_fresh_order(crawls):
    first, second = ([f"{row[0]}:{row[1]}" for row in rows] for rows in crawls[:2])
    common = set(first) & set(second)
    assert len(common) > 0.9 * len(first)  # the same nodes, for the most part (churn)
    in_first = [a for a in first if a in common]
    in_second = [a for a in second if a in common]
    assert in_first != in_second
    same_place = sum(a == b for a, b in zip(in_first, in_second, strict=True))
    assert same_place < 0.01 * len(common)
    assert in_first != sorted(in_first)


def test_about_half_the_rows_are_onion_at_zero_zero(crawls):
    rows = crawls[-1]
    onion = [row for row in rows if str(row[0]).endswith(".onion")]
    assert 0.45 <= len(onion) / len(rows) <= 0.55
    assert all(row[10] == 0.0 and row[11] == 0.0 and row[9] is None for row in onion)
    assert {row[13] for row in onion} == {"TOR"}


def test_values_have_a_real_exports_spread(crawls):
    rows = crawls[-1]
    assert all(len(row) == 15 for row in rows)
    agents = Counter(row[3] for row in rows)
    top = agents.most_common(1)[0][1] / len(rows)
    assert 0.25 < top < 0.4  # the export's most common: 33%
    assert len(agents) > 80  # a long tail (196 in 14,410 rows)
    clearnet = [row for row in rows if row[13] not in ("TOR", "I2P", "CJDNS")]
    assert len({row[13] for row in clearnet}) > 0.1 * len(clearnet)
    assert all(row[7] for row in clearnet)  # every clearnet row has a hostname
    assert len({row[9] for row in clearnet}) > 40


def test_the_history_links_many_distinct_files_in_turn(tmp_path: Path):
    real_size_history(tmp_path, files=12, distinct=4, end=1_790_000_000, later=0, seed=5)
    files = sorted(tmp_path.glob("*.json"), key=lambda p: int(p.stem))
    inodes = [path.stat().st_ino for path in files]
    assert len(files) == 12
    assert len(set(inodes)) == 4
    assert inodes[:4] == inodes[4:8]  # linked in turn
