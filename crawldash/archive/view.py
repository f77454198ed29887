"""The archive as the server sees it: which crawls it holds (for ``/api/v1/snapshots/``),
a pruned crawl loaded back (in the loader process), its size for ``/metrics``, and the
writers' failures, logged once. Nothing here imports pyarrow: the server looks at names
and manifests only (``layout.py``); the loader process reads Parquet.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..crawl.decode import Rules
from ..live.loader.new_crawl import load_new_crawl
from ..live.snapshot.past_crawls import ArchivedSnapshot
from ..settings.serve import StartupError
from .arriving import Target, load_and_archive
from .layout import Contents, look
from .outcome import Outcome, read_outcome
from .pruned import load_pruned

log = logging.getLogger(__name__)
LOOK_EVERY = 5.0  # seconds between looks at the archive's folders
RELOOK_AFTER = 1.0  # seconds: a crawl asked for and not seen is looked for again after
Run = Callable[..., Awaitable[Any]]  # LoaderClient.run


class ArchiveView:
    """One network's archive, looked at again every LOOK_EVERY seconds (off the loop)."""

    def __init__(self, target: Target, run: Run) -> None:
        self.target = target
        self.run = run
        self.contents = Contents()
        self.outcome = Outcome()
        self.looked_at = 0.0  # monotonic time of the last look
        self.changes = 0  # counts changes of the crawls archived (pages made from them)
        self._merged: tuple[object, int, list[int]] | None = None

    def look(self) -> None:
        """Look at the archive's folders and the writers' outcome: blocks (run it in a
        thread); a new failure is logged once, and so is the recovery."""
        contents = look(self.target.archive_dir, self.target.network)
        outcome = read_outcome(self.target.outcome)
        if contents.files.keys() != self.contents.files.keys() or (
            contents.counts.keys() != self.contents.counts.keys()
        ):
            self.changes += 1
        before, self.contents, self.outcome = self.outcome, contents, outcome
        self.looked_at = time.monotonic()
        if outcome.failing and not before.failing:
            log.error(
                "archiving to %s failed: %s; tried again with each new crawl, serving goes on",
                self.target.archive_dir,
                outcome.error,
            )
        elif before.failing and not outcome.failing and before.at:
            log.info("archiving to %s works again", self.target.archive_dir)

    def listed(self, files: list[int]) -> list[int]:
        """The crawls of ``files`` (newest first) and those only archived, newest first."""
        merged = self._merged
        if merged is not None and merged[0] is files and merged[1] == self.changes:
            return merged[2]
        archived = self.contents.files.keys()
        union = sorted(archived | set(files), reverse=True) if archived else files
        self._merged = (files, self.changes, union)
        return union

    def counted(self, timestamp: int) -> tuple[int, int | None] | None:
        """An archived crawl's nodes and consensus height, as its writer counted them (None:
        not archived, or archived before they were kept)."""
        return self.contents.counts.get(timestamp)

    async def load(self, timestamp: int) -> ArchivedSnapshot | None:
        """A crawl the archive holds, in every served form, loaded in the loader process."""
        if timestamp not in self.contents.files:
            if time.monotonic() - self.looked_at < RELOOK_AFTER:
                return None
            await asyncio.to_thread(self.look)  # archived since the last look?
            if timestamp not in self.contents.files:
                return None
        return await self.run(  # type: ignore[no-any-return]
            load_pruned, self.target.archive_dir, self.target.network, timestamp
        )


def check_archive_extra() -> None:
    """StartupError if the archive's library is not installed."""
    if importlib.util.find_spec("pyarrow") is None:
        raise StartupError(
            "--archive-dir needs pyarrow: pip install '/path/to/crawldash[archive]' "
            "(the clone's folder)"
        )


def archiving_loads(
    targets: dict[Path, Target],
) -> Callable[[Callable[..., Any], tuple[Any, ...]], tuple[Callable[..., Any], tuple[Any, ...]]]:
    """What the loader runs instead of each load of a new crawl: the same load, which then
    archives the crawl it decoded (``LoaderClient.instead``).

    Args:
        targets: each network's archive, by its data folder.
    """

    def instead(
        function: Callable[..., Any], args: tuple[Any, ...]
    ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        if function is load_new_crawl:
            path, rules = args
            target = targets.get(path.parent)
            if target is not None and isinstance(rules, Rules):
                return load_and_archive, (path, rules, target)
        return function, args

    return instead
