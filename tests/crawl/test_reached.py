"""crawl/reached.py: bitnodes' crawl folder beside an export, and which crawl file an
export is paired with."""

from __future__ import annotations

from pathlib import Path

from crawldash.crawl.reached import Reached, newest_not_after, read_reached, sibling_crawl_dir

from ..factories import export_body, row, write_snapshot

MAGIC = "f9beb4d9"


def test_the_crawl_folder_beside_an_export_folder(tmp_path: Path):
    export = tmp_path / "data" / "export" / MAGIC
    export.mkdir(parents=True)
    assert sibling_crawl_dir(export) is None  # not there yet
    crawl = tmp_path / "data" / "crawl" / MAGIC
    crawl.mkdir(parents=True)
    assert sibling_crawl_dir(export) == crawl
    assert sibling_crawl_dir(tmp_path / "data") is None  # not laid out as bitnodes does


def test_the_newest_crawl_file_not_named_after_the_export(tmp_path: Path):
    for timestamp in (100, 200, 300):
        (tmp_path / f"{timestamp}.json").write_bytes(b"[]")
    (tmp_path / "0250.json").write_bytes(b"[]")  # not a crawl's name
    assert newest_not_after(tmp_path, 250) == (200, tmp_path / "200.json")
    assert newest_not_after(tmp_path, 300) == (300, tmp_path / "300.json")
    assert newest_not_after(tmp_path, 99) is None


def test_read_reached_takes_every_address_of_either_form(tmp_path: Path):
    path = write_snapshot(tmp_path, 100, export_body([row("198.51.100.1"), row("2001:DB8::1")]))
    reached = read_reached(path, 100, max_size=1 << 20)
    assert isinstance(reached, Reached)
    assert reached.timestamp == 100
    assert reached.addresses == {"198.51.100.1:8333", "[2001:db8::1]:8333"}
    crawl_only = write_snapshot(tmp_path, 200, b'[["198.51.100.9", 8333, 1, 5]]')
    assert read_reached(crawl_only, 200, 1 << 20).addresses == {"198.51.100.9:8333"}
    empty = write_snapshot(tmp_path, 300, b"[]")
    assert read_reached(empty, 300, 1 << 20).addresses == frozenset()
