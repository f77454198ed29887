"""The history index on disk: one file per data folder, replaced whole by atomic renames."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import msgspec

from ..crawl.files import write_atomically
from .history import HistoryEntry

log = logging.getLogger(__name__)
_entries_decoder = msgspec.json.Decoder(list[HistoryEntry])
_encoder = msgspec.json.Encoder()


class HistoryStore:
    """The history index on disk, written atomically; once writing fails, memory only."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.failed = False

    @classmethod
    def for_data_dir(cls, state_dir: Path, data_dir: Path) -> HistoryStore:
        """One index per data folder, so that instances over different folders never mix."""
        digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
        return cls(state_dir / f"history-{digest}.json")

    def load(self) -> list[HistoryEntry]:
        try:
            return _entries_decoder.decode(self.path.read_bytes())
        except FileNotFoundError:
            return []
        except (OSError, msgspec.DecodeError) as exc:
            log.warning(
                "history index %s is unusable, rebuilding it from files: %s", self.path, exc
            )
            return []

    def save(self, entries: list[HistoryEntry]) -> None:
        if self.failed:
            return
        try:
            write_atomically(self.path, _encoder.encode(entries))
        except OSError as exc:
            self.failed = True
            log.warning(
                "cannot write the history index %s (%s); history is kept in memory only "
                "and crawls pruned from the data folder will be lost at restart",
                self.path,
                exc,
            )
