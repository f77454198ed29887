"""Worker processes that end with the process that started them.

A process pool's worker waits on its queue of calls, and holds that queue's writing end
itself, so it never sees the queue end: if the process that started it is killed outright
(SIGKILL, the OOM killer), the worker waits for good, holding its memory. The counting
processes and ``crawldash archive``'s processes call ``end_with_parent`` first.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal

PR_SET_PDEATHSIG = 1


def end_with_parent() -> None:
    """Have the kernel kill this process when the thread that started it ends (Linux's
    parent-death signal; elsewhere nothing is done). A pool's workers are started by the
    thread that submits to it: the server's event loop, the archive run's main thread."""
    started_by = multiprocessing.parent_process()
    parent = started_by.pid if started_by is not None else os.getppid()
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it ended before the signal was asked for
        os._exit(1)
