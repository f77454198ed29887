"""crawl/files.py: which names are crawls, listing the data folder and reading it."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from crawldash.crawl.files import (
    CRAWLS_END,
    NAME_SLACK,
    FileVersion,
    Listing,
    LoadError,
    crawl_time,
    is_crawler_file,
    list_data_dir,
    misnamed,
    named_ahead,
    read_file,
    snapshot_timestamp,
)

TS = 1_700_000_000


@pytest.mark.parametrize(
    ("name", "timestamp"),
    [
        ("1700000000.json", 1_700_000_000),
        ("1.json", 1),
        (f"{CRAWLS_END - 1}.json", CRAWLS_END - 1),
        (f"{CRAWLS_END}.json", None),
        ("0.json", None),
        ("01700000000.json", None),
        ("-5.json", None),
        ("+5.json", None),
        ("1700000000.JSON", None),
        ("1700000000.json.tmp", None),
        (".1700000000.json", None),
        ("status.json", None),
        ("1_700.json", None),
        ("١٢.json", None),  # Arabic-Indic digits: int() reads them, the rule does not
    ],
)
def test_the_crawl_name_rule(name: str, timestamp: int | None):
    assert snapshot_timestamp(name) == timestamp


def test_crawl_time_is_the_rule_without_the_suffix():
    assert crawl_time("1700000000") == TS
    assert crawl_time("1700000000.json") is None
    assert crawl_time("") is None


def test_crawler_files_are_crawls_and_the_status():
    assert is_crawler_file("status.json")
    assert is_crawler_file("1700000000.json")
    assert not is_crawler_file("notes.json")


def test_a_crawl_named_ahead_of_the_clock_is_refused_past_the_skew():
    assert named_ahead(TS + 3600, now=TS, max_clock_skew=3600) is None
    error = named_ahead(TS + 3601, now=TS, max_clock_skew=3600)
    assert error is not None
    assert error.kind == "future"
    assert "3601 s ahead" in str(error)


def test_a_load_error_keeps_its_kind_across_pickling():
    error = pickle.loads(pickle.dumps(LoadError("too_large", "big")))
    assert (error.kind, str(error)) == ("too_large", "big")


def listing(versions: dict[int, float]) -> Listing:
    """A listing of crawls written at the given unix times."""
    snapshots = {
        ts: (f"{ts}.json", FileVersion(10, int(written * 1e9))) for ts, written in versions.items()
    }
    newest = sorted(snapshots, reverse=True)
    return Listing(snapshots, None, newest, frozenset(), frozenset())


def test_a_crawl_named_after_its_writing_is_misnamed_once_a_plausible_one_follows():
    late = TS + NAME_SLACK + 1
    alone = listing({late: TS})
    assert misnamed(alone, late) is None  # served until a plausible crawl comes
    followed = listing({late: TS, TS + 10: TS + 10})
    error = misnamed(followed, late)
    assert error is not None
    assert error.kind == "misnamed"
    assert misnamed(followed, TS + 10) is None


def test_a_crawl_named_within_the_slack_is_never_misnamed():
    near = listing({TS + NAME_SLACK: TS, TS + NAME_SLACK + 5: TS + 5})
    assert misnamed(near, TS + NAME_SLACK) is None


def test_listing_finds_crawls_and_status_and_nothing_else(tmp_path: Path):
    for name in ("1700000600.json", "1700000000.json", "status.json", "notes.txt", "07.json"):
        (tmp_path / name).write_bytes(b"[]")
    listed = list_data_dir(tmp_path)
    assert listed.newest_first == [TS + 600, TS]
    assert listed.status is not None
    assert listed.names == {"1700000600.json", "1700000000.json", "status.json"}
    assert listed.changed == {TS, TS + 600}


def test_listing_again_looks_only_at_the_names_that_changed(tmp_path: Path):
    (tmp_path / "1700000000.json").write_bytes(b"[]")
    first = list_data_dir(tmp_path)
    (tmp_path / "1700001200.json").write_bytes(b"[1]")
    (tmp_path / "1700000000.json").unlink()
    later = list_data_dir(tmp_path, first, only=["1700001200.json", "1700000000.json"])
    assert later.newest_first == [TS + 1200]
    assert later.changed == {TS + 1200}
    assert later.names == {"1700001200.json", "status.json"}  # status is always named


def test_read_file_gives_the_bytes_and_their_version(tmp_path: Path):
    path = tmp_path / "1700000000.json"
    path.write_bytes(b"[1, 2]")
    data, version = read_file(path, max_size=100)
    assert data == b"[1, 2]"
    assert version == FileVersion.of(path.stat())


@pytest.mark.parametrize(
    ("content", "max_size", "kind"),
    [(b"", 100, "empty"), (b" \n\t", 100, "empty"), (b"[1, 2, 3]", 4, "too_large")],
)
def test_read_file_refuses_empty_and_oversized_files(
    tmp_path: Path, content: bytes, max_size: int, kind: str
):
    path = tmp_path / "c.json"
    path.write_bytes(content)
    with pytest.raises(LoadError) as refused:
        read_file(path, max_size)
    assert refused.value.kind == kind


def test_read_file_refuses_a_folder_and_a_fifo_without_blocking(tmp_path: Path):
    os.mkfifo(tmp_path / "fifo.json")
    for name in ("fifo.json", ""):
        with pytest.raises(LoadError) as refused:
            read_file(tmp_path / name, 100)
        assert refused.value.kind == "not_a_file"


def test_read_file_tells_a_dangling_link_from_a_missing_file(tmp_path: Path):
    (tmp_path / "link.json").symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(LoadError, match="link to nothing"):
        read_file(tmp_path / "link.json", 100)
    with pytest.raises(FileNotFoundError):
        read_file(tmp_path / "gone.json", 100)
