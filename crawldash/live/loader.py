"""The loader process: new snapshots are decoded, indexed, encoded and compressed in a
process of their own, so that a large crawl never holds the serving process's GIL.

Fresh for every load (``max_tasks_per_child=1``), so that the memory a load needed is
given back at once, and at nice 10 (on a busy core answering comes first). Each one is
forked from a fork server, a process started once that has already imported the loading
code: not forked from the server itself (it has threads), and not spawned (a new
interpreter importing everything again would cost a few hundred ms of CPU per crawl, at
the server's priority until it could lower its own).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, ProcessPoolExecutor
from typing import Any, TypeVar

from ..crawl.files import LoadError

log = logging.getLogger(__name__)
T = TypeVar("T")
LOADER_NICENESS = 10
PRELOADED = ["crawldash.live.prepared"]  # imported once by the fork server


class LoaderProcess:
    """Runs loads in the loader process; replaces it when it dies.

    Until ``start()``, loads run in a worker thread: before the server listens nothing is
    being answered, and spawning the process first would only delay the first answer.
    A load during which the process dies is tried once more, in the new process; if that
    one dies too, the load is a ``LoadError`` of kind ``loader_died``.
    """

    def __init__(self, niceness: int = LOADER_NICENESS) -> None:
        self.niceness = niceness
        self.deaths = 0  # loader processes that died during a load
        self.runs = 0  # calls that ran in the loader process (not in a thread)
        self._pool: ProcessPoolExecutor | None = None

    def start(self) -> None:
        if self._pool is None:
            self._pool = self._new_pool()

    async def warm_up(self) -> None:
        """Start the process now, not when the next crawl arrives."""
        await self.run(os.getpid)

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` in the loader process (a thread before ``start()``)."""
        if self._pool is None:
            return await asyncio.to_thread(function, *args)
        self.runs += 1
        for attempt in (1, 2):
            try:
                return await asyncio.get_running_loop().run_in_executor(self._pool, function, *args)
            except BrokenExecutor as exc:  # killed, or out of memory
                self.deaths += 1
                self._pool.shutdown(wait=False)
                self._pool = self._new_pool()
                log.error(
                    "the snapshot loader process died (%s); started a new one%s",
                    exc,
                    ", and trying the load again in it" if attempt == 1 else "",
                )
        raise LoadError("loader_died", "the loader process died twice while loading it")

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.shutdown, wait=True, cancel_futures=True)

    def _new_pool(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOADED)
        return ProcessPoolExecutor(
            max_workers=1,
            mp_context=context,
            max_tasks_per_child=1,
            initializer=os.nice,
            initargs=(self.niceness,),
        )
