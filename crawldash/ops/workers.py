"""``--workers N``: N server processes sharing one port through SO_REUSEPORT.

Each worker has its own state and watcher (the kernel spreads connections between them).
The parent only supervises: it forwards SIGINT and SIGTERM, and if a worker dies it stops
the others and exits non-zero, so that systemd (or whoever started it) restarts the set.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType

from ..settings.serve import Settings

log = logging.getLogger(__name__)


def run_workers(settings: Settings, serve_one: Callable[[Settings, bool], None]) -> int:
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=serve_one, args=(settings, True), name=f"crawldash-worker-{i}")
        for i in range(settings.workers)
    ]
    for worker in workers:
        worker.start()
    stopping = False

    def forward(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for worker in workers:
            if worker.is_alive() and worker.pid is not None:
                os.kill(worker.pid, signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    log.info("started %d workers sharing port %d", len(workers), settings.port)
    return _supervise(workers, lambda: stopping)


def _supervise(workers: Sequence[BaseProcess], stopping: Callable[[], bool]) -> int:
    alive = list(workers)
    while alive:
        wait([w.sentinel for w in alive])
        for worker in [w for w in alive if not w.is_alive()]:
            alive.remove(worker)
            if not stopping() and worker.exitcode != 0:
                log.error(
                    "worker %s exited with %s; stopping the others", worker.name, worker.exitcode
                )
                for other in alive:
                    other.terminate()
                for other in alive:
                    other.join(10)
                return 1
    return 0
