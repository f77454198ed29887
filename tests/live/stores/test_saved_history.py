"""live/stores/saved_history.py: the history index file's bytes, in each format this
version reads, and its entries encoded in slices."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from crawldash.live.stores.history import HistoryEntry, Kept
from crawldash.live.stores.index_files import HistoryStore
from crawldash.live.stores.saved_history import (
    ENCODE_SLICE,
    Folder,
    Unusable,
    decode_history,
    decode_kept,
    encode_entries_in_slices,
    encode_history,
    history_parts,
)
from crawldash.live.stores.tallies import Values


def test_the_index_round_trips_with_its_folder_and_values(tmp_path: Path):
    values = Values()
    counts = values.pack({"country": [("RU", 2)]})
    entries = [HistoryEntry(100, 2, 10, 20, (2, 0, 0, 0, 0), 900, counts)]
    folder = Folder.of(tmp_path)
    assert folder is not None
    data = encode_history(Kept(entries, values.copy()), folder)
    assert decode_kept(data) == (folder, Kept(entries, values.copy()))
    assert folder.same_folder(Folder.of(tmp_path))
    assert Folder.of(tmp_path / "missing") is None


@pytest.mark.parametrize("count", [0, 1, ENCODE_SLICE, 3 * ENCODE_SLICE + 1])
async def test_entries_encoded_in_slices_make_the_same_file_and_let_the_loop_run(
    tmp_path: Path, count: int
):
    """A long history is saved from entries encoded a slice at a time, with the event loop
    let go between two slices: the file is the one encoded at once, and reads back."""
    values = Values()
    counts = values.pack({"user_agent": [('/"quoted"\\ agent/', 3)]})
    entries = [HistoryEntry(600 * i, i, i, i, (i, 0, 0, 0, 0), i, counts) for i in range(count)]
    kept, folder = Kept(entries, values.copy()), Folder.of(tmp_path)
    turns = 0

    async def other_task() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    running = asyncio.ensure_future(other_task())
    await asyncio.sleep(0)
    before = turns
    encoded = await encode_entries_in_slices(kept)
    between = turns - before
    running.cancel()
    assert between >= count // ENCODE_SLICE  # a turn of the other task after each slice
    assert b"".join(history_parts(encoded, folder)) == encode_history(kept, folder)
    store = HistoryStore(tmp_path / "index.json", tmp_path)
    store.save(encoded)
    assert store.load_kept() == kept
    assert store.path.read_bytes() == encode_history(kept, folder)


def test_formats_one_and_two_are_still_read():
    assert decode_history(b"[[100, 2]]") == (None, [HistoryEntry(100, 2)])
    two = b'{"format": 2, "folder": null, "entries": [[100, 2, 1, 1]]}'
    assert decode_history(two) == (None, [HistoryEntry(100, 2, 1, 1)])


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"format": 9, "entries": []}', "unknown format version 9"),
        (b'{"format": 3, "folder": null, "entries": []}', "without its values"),
        (b'{"format": 2}', "without its folder or entries"),
        (b"[[1, 2, 3, 4, [1]]]", "network counts"),
        (b"not json", "JSON"),
        (
            b'{"format": 3, "folder": null, "values": [[], [], [], [], [], []], '
            b'"entries": [[1, 1, 0, 0, null, null, "SAQAAQAAAAAAAAAAAAAAAAAAAAAAAA=="]]}',
            "counts by value unusable",
        ),
    ],
    ids=["unknown-format", "no-values", "no-entries", "bad-entry", "not-json", "bad-counts"],
)
def test_an_unusable_index_says_why(data: bytes, reason: str):
    with pytest.raises(Unusable, match=reason):
        decode_kept(data)
