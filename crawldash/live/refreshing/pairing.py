"""The crawl paired with each export served: bitnodes' crawl file (the newest not named
after the export) and the bridge's kept attempts of that crawl, read off the event loop
when either changed. They are the evidence of ``/api/check``'s reason
(``live/answers/reasons.py``); without them the reasons say ``up`` or ``unknown``."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from ...crawl.attempts import ATTEMPTS_FILE, KeptAttempts, crawl_attempts, read_kept
from ...crawl.files import FileVersion, LoadError, file_version
from ...crawl.reached import Reached, newest_not_after, read_reached
from ..answers.reasons import Evidence

log = logging.getLogger(__name__)
MAX_REMEMBERED = 64  # unusable file versions remembered, so that each is logged once


class Pairing:
    """Reads the evidence for the newest export, again only when a file changed."""

    def __init__(self, crawl_dir: Path | None, attempts_dir: Path | None, max_size: int) -> None:
        self.crawl_dir, self.attempts_dir, self.max_size = crawl_dir, attempts_dir, max_size
        self._reached: Reached | None = None
        self._kept: tuple[FileVersion, KeptAttempts] | None = None
        self._refused: set[tuple[str, FileVersion | None]] = set()

    async def evidence_for(self, exported: int) -> Evidence:
        """What is known of the crawl paired with the export named ``exported``.

        Args:
            exported: the served export's timestamp.

        Returns:
            The evidence; empty where a source is not configured or unusable.
        """
        return await asyncio.to_thread(self._evidence_for, exported)

    def _evidence_for(self, exported: int) -> Evidence:
        reached = self._read_reached(exported)
        kept = self._read_kept()
        not_after = reached.timestamp if reached is not None else exported
        return Evidence(reached, crawl_attempts(kept, not_after) if kept is not None else None)

    def _read_reached(self, exported: int) -> Reached | None:
        if self.crawl_dir is None:
            return None
        try:
            paired = newest_not_after(self.crawl_dir, exported)
            if paired is None:
                return None
            timestamp, path = paired
            kept = self._reached
            if kept is not None and (kept.timestamp, kept.version) == (
                timestamp,
                file_version(path),
            ):
                return kept
            self._reached = read_reached(path, timestamp, self.max_size)
            self._refused.discard((str(self.crawl_dir), None))
        except (OSError, LoadError) as exc:
            self._refuse(str(self.crawl_dir), None, exc)
            return None
        return self._reached

    def _read_kept(self) -> KeptAttempts | None:
        if self.attempts_dir is None:
            return None
        path = self.attempts_dir / ATTEMPTS_FILE
        version = file_version(path)
        if version is None:
            return None
        if self._kept is not None and self._kept[0] == version:
            return self._kept[1]
        try:
            kept = read_kept(self.attempts_dir)
        except (OSError, LoadError, ValueError) as exc:
            self._refuse(str(path), version, exc)
            return None
        self._kept = None if kept is None else (version, kept)
        return kept

    def _refuse(self, name: str, version: FileVersion | None, error: Exception) -> None:
        """Log an unusable source once per version (a folder: once until it works)."""
        if (name, version) in self._refused:
            return
        if len(self._refused) >= MAX_REMEMBERED:
            self._refused.clear()
        self._refused.add((name, version))
        log.warning("crawl evidence not read from %s, reasons degrade to unknown: %s", name, error)
