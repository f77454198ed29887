"""crawl/count.py: a crawl counted for the history without building its nodes, and a run
of crawls counted as changes from one to the next."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from crawldash.crawl.count import AddressChanges, CrawlCount, count_nodes, read_count, read_counts
from crawldash.crawl.decode import Rules
from crawldash.crawl.files import LoadError

from ..factories import ONION, api_body, export_body, row, rows, write_snapshot

RULES = Rules(max_file_size=1 << 20)


def test_a_crawl_counted_by_network_and_value():
    body = [row("198.51.100.1"), row("198.51.100.1", height=5), row("2001:db8::1")]
    counted = count_nodes(json.dumps([*body, row(ONION, tor=True)]).encode())
    assert counted.nodes == 3
    assert counted.networks == (1, 1, 1, 0, 0)
    assert counted.latest_height == 900_000
    assert counted.addresses == ["198.51.100.1:8333", "[2001:db8::1]:8333", f"{ONION}:8333"]
    assert counted.tallies["height"] == {"behind_more": 1, "consensus": 2}  # the later row
    assert counted.tallies["country"] == {"RU": 2, None: 1}


def test_crawl_only_rows_are_counted_too():
    counted = count_nodes(b'[["198.51.100.1", 8333, 1, 10], ["198.51.100.2", 8333, 1, 10]]')
    assert (counted.nodes, counted.latest_height) == (2, 10)
    assert counted.tallies["user_agent"] == {None: 2}


def test_the_api_form_is_counted_from_its_snapshot():
    node = row("unused")[2:]
    counted = count_nodes(api_body(1, {"198.51.100.1:8333": node, "[2001:db8::2]:1": node}))
    assert (counted.nodes, counted.networks) == (2, (1, 1, 0, 0, 0))


def test_a_crawl_the_loader_refuses_is_refused_alike():
    with pytest.raises(LoadError) as refused:
        count_nodes(json.dumps([row("example.com")]).encode())
    assert refused.value.kind == "no_usable_rows"
    assert count_nodes(b"[]", allow_empty=True).nodes == 0


def test_a_count_survives_pickling_as_a_counting_process_sends_it():
    counted = count_nodes(export_body(rows(3)))
    again = pickle.loads(pickle.dumps(counted))
    assert again == counted
    empty = CrawlCount(0, (0,) * 5, 0, [], {})
    assert pickle.loads(pickle.dumps(empty)).addresses == []


def test_a_run_is_counted_as_changes_from_the_crawl_before(tmp_path: Path):
    first = write_snapshot(tmp_path, 1, export_body([row("198.51.100.1"), row("198.51.100.2")]))
    broken = write_snapshot(tmp_path, 2, b"[1")
    third = write_snapshot(tmp_path, 3, export_body([row("198.51.100.2"), row("2001:db8::3")]))
    gone = tmp_path / "4.json"
    counted = read_counts([first, broken, gone, third], RULES)
    assert isinstance(counted[0], CrawlCount)
    assert counted[0].changes is None
    assert isinstance(counted[1], LoadError)
    assert counted[1].kind == "decode"
    assert counted[2] is None
    last = counted[3]
    assert isinstance(last, CrawlCount)
    assert last.addresses == []  # given as changes from the first, the broken one skipped
    assert last.changes == AddressChanges(["[2001:db8::3]:8333"], ["198.51.100.1:8333"])
    assert (last.nodes, last.networks) == (2, (1, 1, 0, 0, 0))


def test_read_count_reads_one_file(tmp_path: Path):
    path = write_snapshot(tmp_path, 1, export_body(rows(4)))
    assert read_count(path, RULES).nodes == 4
