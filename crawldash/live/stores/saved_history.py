"""The history index file's bytes, in each format this version reads; a long history's
entries encoded on the event loop in slices, so that saving it never holds the loop."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import NamedTuple

import msgspec

from ...models import Base
from .history import HistoryEntry, Kept
from .tallies import Values

ENCODE_SLICE = 256  # index entries encoded between two yields to the event loop
_encoder = msgspec.json.Encoder()

# The history index's format. 1: a bare JSON array of entries (read, never written again);
# 2: an object with the format, the data folder and the entries (read, never written
# again); 3: the same with the values that the entries' counts name.
HISTORY_FORMAT = 3


class Unusable(ValueError):
    """Index bytes this version cannot read: damaged, of another shape or format."""


class Folder(Base, frozen=True):
    """The data folder an index was kept for: its path, and its identity (device and
    inode), which a rename keeps; None if it could not be read."""

    path: str
    device: int | None = None
    inode: int | None = None

    @classmethod
    def of(cls, data_dir: Path) -> Folder | None:
        """``data_dir`` as it is now; None if it cannot be read (missing, say)."""
        path = data_dir.resolve()
        try:
            info = path.stat()
        except OSError:
            return None
        return cls(str(path), info.st_dev, info.st_ino)

    def same_folder(self, other: Folder | None) -> bool:
        """True if ``other`` is this folder, wherever it is now."""
        mine = (self.device, self.inode)
        return other is not None and self.device is not None and mine == (other.device, other.inode)


class EncodedKept(NamedTuple):
    """``Kept`` with its entries already encoded (``encode_entries_in_slices``)."""

    entries: bytearray  # the JSON array of the entries
    values: list[list[str]]


class _HistoryFile(Base, frozen=True):
    format: int
    folder: Folder | None
    values: list[list[str]]
    entries: list[HistoryEntry]


class _Envelope(Base, frozen=True):
    """A history index as first read: its format, the rest left to decode by format."""

    format: int
    folder: msgspec.Raw = msgspec.Raw()
    values: msgspec.Raw = msgspec.Raw()
    entries: msgspec.Raw = msgspec.Raw()


_history_decoder = msgspec.json.Decoder(list[HistoryEntry] | _Envelope)
_folder_decoder = msgspec.json.Decoder(Folder | None)
_values_decoder = msgspec.json.Decoder(list[list[str]])
_entries_decoder = msgspec.json.Decoder(list[HistoryEntry])


def encode_history(entries: list[HistoryEntry] | Kept, folder: Folder | None) -> bytes:
    """An index file's bytes: ``entries`` alone name no values (none may hold counts)."""
    kept = entries if isinstance(entries, Kept) else Kept(entries, Values().copy())
    return _encoder.encode(_HistoryFile(HISTORY_FORMAT, folder, kept.values, kept.entries))


def history_parts(
    entries: list[HistoryEntry] | Kept | EncodedKept, folder: Folder | None
) -> tuple[bytes | bytearray, ...]:
    """An index file's bytes, in parts to write one after another: entries already encoded
    go between the file's head and tail, so that a long history's are not copied again."""
    if not isinstance(entries, EncodedKept):
        return (encode_history(entries, folder),)
    head = _encoder.encode(_HistoryFile(HISTORY_FORMAT, folder, entries.values, []))
    cut = len(head) - len(b"[]}")  # the entries are the file's last field
    return head[:cut], entries.entries, head[cut + len(b"[]") :]


def decode_history(data: bytes) -> tuple[Folder | None, list[HistoryEntry]]:
    """The folder a history index was kept for (None in format 1) and its entries;
    Unusable if the bytes are not a history index of a format this version reads."""
    folder, kept = decode_kept(data)
    return folder, kept.entries


def decode_kept(data: bytes) -> tuple[Folder | None, Kept]:
    """The folder a history index was kept for (None in format 1), its entries and the
    values their counts name (none before format 3); Unusable if the bytes are not a
    history index of a format this version reads, or counts name values it does not hold."""
    try:
        decoded = _history_decoder.decode(data)
        if isinstance(decoded, list):  # format 1, as written before the format had a number
            folder, values, entries = None, None, decoded
        elif decoded.format not in (2, HISTORY_FORMAT):
            raise Unusable(f"unknown format version {decoded.format}")
        elif not decoded.folder or not decoded.entries:
            raise Unusable(f"format {decoded.format} without its folder or entries")
        elif decoded.format == HISTORY_FORMAT and not decoded.values:
            raise Unusable(f"format {HISTORY_FORMAT} without its values")
        else:
            folder = _folder_decoder.decode(decoded.folder)
            values = _values_decoder.decode(decoded.values) if decoded.values else None
            entries = _entries_decoder.decode(decoded.entries)
        table = Values(values)
        for entry in entries:
            if entry.counts is not None:
                table.check(entry.counts)
        return folder, Kept(entries, table.copy())
    except msgspec.DecodeError as exc:
        raise Unusable(str(exc)) from None
    except Unusable:
        raise
    except ValueError as exc:  # values or counts that do not fit together
        raise Unusable(f"counts by value unusable: {exc}") from None


async def encode_entries_in_slices(kept: Kept) -> EncodedKept:
    """``kept`` with its entries encoded on the event loop, ENCODE_SLICE entries between
    two yields to requests. Whole, a long history's entries are one call that holds the
    GIL, from a worker thread too, and so stops the event loop until it returns."""
    entries, encoded = kept.entries, bytearray()
    for start in range(0, len(entries), ENCODE_SLICE):
        end = len(encoded) - 1  # a slice's "[" replaces the "]" before it, then is a ","
        _encoder.encode_into(entries[start : start + ENCODE_SLICE], encoded, max(end, 0))
        if end > 0:
            encoded[end] = ord(",")
        await asyncio.sleep(0)
    return EncodedKept(encoded or bytearray(b"[]"), kept.values)
