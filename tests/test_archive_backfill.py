"""A backfill's complete days, built whole in memory and written once: the same rows and
file as crawl-by-crawl archiving and compaction make, export rows read straight into the
archive's rows as crawldash decodes them, and a day another writer begins meanwhile still
archived once per crawl."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crawldash.archive import export_rows as export_rows_module
from crawldash.archive.backfill import backfill
from crawldash.archive.columns import columns_of
from crawldash.archive.export_rows import SORTED_BY, export_rows
from crawldash.archive.layout import DAY_FILE, MANIFEST, CrawlFile, day_of, look
from crawldash.archive.parquet import crawls_in, table_of
from crawldash.archive.writing import archive_crawl, compact
from crawldash.crawl.decode import Rules, decode_snapshot
from crawldash.crawl.files import LoadError
from tests.factories import row as export_row
from tests.factories import write_snapshot
from tests.test_archive import END, rows_per_crawl, write_crawls

RULES = Rules(max_file_size=64 * 1024 * 1024)


def archive_one_by_one(data: Path, archive: Path, crawls: list[int]) -> None:
    """The server's way: each crawl's part as it arrives, then the day compacted."""
    for timestamp in crawls:
        path = data / f"{timestamp}.json"
        snapshot = decode_snapshot(path.read_bytes(), timestamp)
        stat = path.stat()
        archive_crawl(archive, "main", snapshot, CrawlFile(stat.st_size, stat.st_mtime_ns))
    for day in sorted({day_of(t) for t in crawls}):
        compact(archive, "main", day)


def test_a_day_built_whole_is_the_file_compaction_makes_of_its_parts(tmp_path: Path) -> None:
    data = tmp_path / "data"
    counts = write_crawls(data, crawls=40, interval=1800)  # a complete day, then the next's
    done = backfill(data, tmp_path / "whole", "main", RULES, processes=1)
    assert sorted(done.archived) == sorted(counts)
    archive_one_by_one(data, tmp_path / "parts", sorted(counts))
    day = day_of(min(counts))
    whole, parts = (tmp_path / name / "network=main" / f"date={day}" for name in ("whole", "parts"))
    assert sorted(os.listdir(whole)) == [MANIFEST, DAY_FILE]
    assert pq.read_table(whole / DAY_FILE).equals(pq.read_table(parts / DAY_FILE))
    built, compacted = pq.ParquetFile(whole / DAY_FILE), pq.ParquetFile(parts / DAY_FILE)
    assert built.metadata.num_row_groups == compacted.metadata.num_row_groups > 1
    assert crawls_in(whole / DAY_FILE) == crawls_in(parts / DAY_FILE)
    assert json.loads((whole / MANIFEST).read_bytes()) == json.loads(
        (parts / MANIFEST).read_bytes()
    )


def test_a_day_another_writer_begins_meanwhile_is_archived_once_per_crawl(tmp_path: Path) -> None:
    data, archive = tmp_path / "data", tmp_path / "archive"
    counts = write_crawls(data, crawls=40, interval=1800)
    first_day = sorted(t for t in counts if day_of(t) == day_of(min(counts)))
    other = first_day[3]  # archived by another writer (the server) while the day is built

    def meanwhile() -> bool:
        if not look(archive, "main").files:
            archive_one_by_one(data, archive, [other])
        return False

    done = backfill(data, archive, "main", RULES, stop=meanwhile, processes=1)
    assert other not in done.archived
    assert sorted(done.archived) == sorted(set(counts) - {other})
    assert rows_per_crawl(archive) == counts  # each crawl once
    folder = archive / "network=main" / f"date={day_of(other)}"
    assert sorted(os.listdir(folder)) == [MANIFEST, DAY_FILE]  # compacted
    assert sorted(map(int, json.loads((folder / MANIFEST).read_bytes())["crawls"])) == first_day


def test_a_crawl_named_ahead_of_the_clock_is_left_for_a_later_run(tmp_path: Path) -> None:
    data, archive = tmp_path / "data", tmp_path / "archive"
    now = int(time.time())
    near, far = now + 60, now + 400 * 86400  # within --max-clock-skew's default; a year on
    for timestamp in (now - 600, near, far):
        write_snapshot(data, timestamp, export_body([export_row("203.0.113.5")]))
    done = backfill(data, archive, "main", RULES, processes=1)
    assert sorted(done.archived) == [now - 600, near]
    assert "ahead of this machine's clock" in done.refused[far]
    assert far not in look(archive, "main").files
    # Nothing later is archived: the day of the newest crawl is not taken for complete.
    assert DAY_FILE not in os.listdir(archive / "network=main" / f"date={day_of(near)}")
    again = backfill(data, archive, "main", Rules(RULES.max_file_size, max_clock_skew=10**9))
    assert again.archived == [far]


def export_body(rows: list[list[object]]) -> bytes:
    return json.dumps(rows).encode()


def test_export_rows_are_the_rows_of_crawldash_s_decode(tmp_path: Path) -> None:
    write_crawls(tmp_path, crawls=2, nodes=300, end=END)
    body = (tmp_path / f"{END}.json").read_bytes()
    rows = json.loads(body)
    base = rows[0][2:]
    rows += [
        [*rows[5][:6], 7, *rows[5][7:]],  # a repeat, later: its fields, at the first's place
        ["2001:DB8:0:0::1", 8333, *base],  # spellings of one IPv6 address
        ["2001:db8::1", 8333, *base],
        ["198.51.100.7", 0, *base],  # unusable: the port, the host
        ["198.51.100.8", 2**40, *base],
        ["not-a-host", 8333, *base],
        ["fc00:1::7", 8333, *base],  # cjdns
    ]
    for data in (body, export_body(rows), export_body(rows[-3:])):
        snapshot = decode_snapshot(data, END)
        got = export_rows(data, END, "main", allow_empty=False)
        assert got is not None
        decoded = table_of(columns_of(snapshot, "main"))
        assert got.rows.equals(decoded.sort_by(SORTED_BY))  # sorted by node
        assert (got.nodes, got.height) == (len(snapshot.nodes), snapshot.latest_height)


def test_hosts_forgotten_past_the_limit_are_learnt_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_rows_module, "HOSTS_KEPT", 50)  # fewer than a crawl's nodes
    write_crawls(tmp_path, crawls=3, nodes=120, end=END)
    for path in sorted(tmp_path.glob("*.json")):
        data = path.read_bytes()
        got = export_rows(data, END, "main", allow_empty=False)
        assert got is not None
        decoded = table_of(columns_of(decode_snapshot(data, END), "main"))
        assert got.rows.equals(decoded.sort_by(SORTED_BY))


@pytest.mark.parametrize(
    "body",
    [
        b"[",
        b"[]",
        b'[["not-a-host", 8333, 70016, "/x/", 0, 1, 2, null, null, null, '
        b"0.0, 0.0, null, null, null]]",
        b"[1, 2]",
    ],
)
def test_export_rows_refuse_what_decode_refuses(body: bytes) -> None:
    with pytest.raises(LoadError) as decoded:
        decode_snapshot(body, END)
    with pytest.raises(LoadError) as straight:
        export_rows(body, END, "main", allow_empty=False)
    assert (straight.value.kind, str(straight.value)) == (decoded.value.kind, str(decoded.value))


def test_other_forms_are_left_to_decode() -> None:
    crawl_only = export_body([["198.51.100.7", 8333, 1033, 900_000]])
    assert export_rows(crawl_only, END, "main", allow_empty=False) is None
    huge = export_row("198.51.100.7")
    huge[2] = 2**31  # the protocol version, beyond its 32 bits: the row is skipped
    mixed = export_body([huge, export_row("198.51.100.8")])
    assert export_rows(mixed, END, "main", allow_empty=False) is None
    assert list(decode_snapshot(mixed, END).nodes) == ["198.51.100.8:8333"]
    with pytest.raises(LoadError) as refused:
        export_rows(export_body([huge]), END, "main", allow_empty=False)
    with pytest.raises(LoadError) as decoded:
        decode_snapshot(export_body([huge]), END)
    assert str(refused.value) == str(decoded.value)
    api = json.dumps({"timestamp": END, "nodes": {}}).encode()
    assert export_rows(api, END, "main", allow_empty=True) is None


def test_a_run_stopped_mid_day_leaves_none_of_it_and_the_next_builds_it(tmp_path: Path) -> None:
    data, archive = tmp_path / "data", tmp_path / "archive"
    counts = write_crawls(data, crawls=40, interval=1800)
    asked = []

    def after_five() -> bool:
        asked.append(True)
        return len(asked) > 5

    stopped = backfill(data, archive, "main", RULES, stop=after_five, processes=1)
    assert stopped.archived == []
    assert look(archive, "main").files == {}  # the day is written whole or not at all
    done = backfill(data, archive, "main", RULES, processes=1)
    assert sorted(done.archived) == sorted(counts)
    assert rows_per_crawl(archive) == counts
