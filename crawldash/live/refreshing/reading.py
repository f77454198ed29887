"""Reading crawler files off the event loop: a new crawl in the loader process, a backlog
of older ones in the counting processes, small files in a worker thread.

A file that cannot be used is remembered as rejected (logged once, tried again as its kind
says); a fault of the loader rather than of the file marks the state degraded until a load
succeeds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ...crawl.count import CrawlCount, read_count
from ...crawl.decode import Rules, unprepared
from ...crawl.files import FileVersion, LoadError
from ..loader.client import LoaderClient
from ..loader.counters import Counters
from ..state import State
from .rejections import Rejections

log = logging.getLogger(__name__)
T = TypeVar("T")
COUNT_IN_THREAD_BYTES = 128 * 1024  # larger crawls are counted in the loader process


class Reader:
    """Reads the files of one data folder, by the rules a crawl must keep."""

    def __init__(
        self,
        state: State,
        loader: LoaderClient,
        counters: Counters | None,
        rejected: Rejections,
        *,
        data_dir: Path,
        rules: Rules,
    ) -> None:
        self.state = state
        self.loader = loader
        self.counters = counters  # None: older crawls are counted one at a time
        self.rejected = rejected
        self.data_dir = data_dir
        self.rules = rules

    async def read(
        self,
        name: str,
        version: FileVersion,
        reader: Callable[[Path, Rules], T],
        *,
        in_loader: bool = False,
        path: Path | None = None,
        on_part: Callable[[Any], None] | None = None,
    ) -> T | None:
        """``reader`` over the file (``name`` in the data folder, unless ``path`` is given),
        in the loader process or a worker thread; ``on_part`` as ``LoaderClient.run`` takes it.

        Returns:
            What ``reader`` returns; None if the file is gone or unusable (then it is
            remembered as rejected).
        """
        path = path if path is not None else self.data_dir / name
        if not in_loader:
            return await self._guarded(name, version, asyncio.to_thread(reader, path, self.rules))
        loaded = await self._guarded(
            name, version, self.loader.run(reader, path, self.rules, on_part=on_part)
        )
        if loaded is not None:
            self.state.loader_trouble = None
        return loaded

    async def count(self, name: str, version: FileVersion, batch: bool) -> CrawlCount | None:
        """A crawl's count for the history. One of a batch is counted by the counting
        processes, on every core. A single large crawl is counted in the loader process:
        decoding it in a thread would hold the GIL against requests for as long as it
        takes. Small ones, like most of a long history, are cheaper in a thread."""
        if batch and self.counters is not None:
            path = self.data_dir / name
            return await self._guarded(name, version, self.counters.count(path, self.rules))
        large = version.size > COUNT_IN_THREAD_BYTES
        return await self.read(name, version, read_count, in_loader=large)

    async def count_run(self, files: Sequence[tuple[str, FileVersion]]) -> list[CrawlCount | None]:
        """The counts of consecutive crawls, read as one run by a counting process: each
        after the first holds its addresses as ``changes`` from the count before it that is
        not None (``crawl.count.read_counts``). Without counting processes, each is counted
        whole, in turn, as ``count`` counts it.

        Returns:
            Per file, its count; None if it is gone or unusable (then it is remembered as
            rejected, as ``count`` does).
        """
        if self.counters is None:
            return [await self.count(name, version, True) for name, version in files]
        paths = [self.data_dir / name for name, _ in files]
        try:
            counted = await self.counters.count_run(paths, self.rules)
        except LoadError as exc:  # the counting process died: each is tried again
            counted = [exc] * len(files)
        except Exception as exc:
            log.error("counting a run failed from %s", files[0][0], exc_info=exc)
            counted = [unprepared(exc)] * len(files)
        results: list[CrawlCount | None] = []
        for (name, version), count in zip(files, counted, strict=True):
            if isinstance(count, LoadError):
                self._refused(name, version, count)
                count = None
            results.append(count)
        return results

    async def _guarded(self, name: str, version: FileVersion, reading: Awaitable[T]) -> T | None:
        try:
            return await reading
        except FileNotFoundError:
            return None
        except LoadError as exc:
            self._refused(name, version, exc)
            return None
        except Exception as exc:  # crawldash's own fault, met on this file: it costs the file
            log.error("preparing a crawler file failed name=%s", name, exc_info=exc)
            self._refused(name, version, unprepared(exc))
            return None

    def _refused(self, name: str, version: FileVersion, exc: LoadError) -> None:
        self.rejected.add(name, version, exc)
        if exc.of_the_loader:
            self.state.loader_trouble = f"{name}: {exc}"
