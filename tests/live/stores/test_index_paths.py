"""live/stores/index_paths.py: one index per data folder, and a moved folder's indexes
taken over under its new path."""

from __future__ import annotations

import os
from pathlib import Path

from crawldash.live.stores.history import HistoryEntry
from crawldash.live.stores.index_paths import (
    HISTORY_NAME,
    PRESENCE_NAME,
    adopt_orphan,
    index_path,
)
from crawldash.live.stores.saved_history import Folder, decode_history, encode_history


def test_each_folder_has_its_own_index_names(tmp_path: Path):
    one = index_path(tmp_path, tmp_path / "a", HISTORY_NAME)
    assert one.parent == tmp_path
    assert one.name.startswith("history-")
    assert one.name.endswith(".json")
    assert len(one.name) == len("history-.json") + 16
    assert one != index_path(tmp_path, tmp_path / "b", HISTORY_NAME)
    assert one == index_path(tmp_path, tmp_path / "x" / ".." / "a", HISTORY_NAME)
    assert index_path(tmp_path, tmp_path / "a", PRESENCE_NAME).suffix == ".msgpack"


def test_a_renamed_folder_takes_over_its_indexes(tmp_path: Path):
    state, old = tmp_path / "state", tmp_path / "old"
    state.mkdir()
    old.mkdir()
    kept = index_path(state, old, HISTORY_NAME)
    kept.write_bytes(encode_history([HistoryEntry(1, 2)], Folder.of(old)))
    index_path(state, old, PRESENCE_NAME).write_bytes(b"presence")
    new = tmp_path / "new"
    os.rename(old, new)
    assert adopt_orphan(state, new)
    assert decode_history(index_path(state, new, HISTORY_NAME).read_bytes())[1] == [
        HistoryEntry(1, 2)
    ]
    assert index_path(state, new, PRESENCE_NAME).read_bytes() == b"presence"
    assert not kept.exists()


def test_the_index_of_a_folder_still_in_place_is_left_alone(tmp_path: Path):
    state, here, there = tmp_path / "state", tmp_path / "here", tmp_path / "there"
    for folder in (state, here, there):
        folder.mkdir()
    index_path(state, there, HISTORY_NAME).write_bytes(encode_history([], Folder.of(there)))
    assert not adopt_orphan(state, here)
    assert not index_path(state, here, HISTORY_NAME).exists()


def test_a_copied_folder_adopts_the_index_whose_crawls_it_holds(tmp_path: Path):
    state, gone, copy = tmp_path / "state", tmp_path / "gone", tmp_path / "copy"
    state.mkdir()
    copy.mkdir()
    crawl = copy / "100.json"
    crawl.write_bytes(b"[]")
    info = crawl.stat()
    entry = HistoryEntry(100, 0, info.st_size, info.st_mtime_ns)
    folder = Folder(str(gone), 1, 1)  # a folder that is no longer anywhere
    index_path(state, gone, HISTORY_NAME).write_bytes(encode_history([entry], folder))
    assert adopt_orphan(state, copy)
    assert index_path(state, copy, HISTORY_NAME).exists()
