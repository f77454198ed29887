"""The loader's place on a busy core: the SCHED_BATCH policy (a fair share of the core, but
never preempting the server on waking) and the shortest scheduler slice the kernel grants,
for the loader process and every process it forks (``process.py`` says why)."""

from __future__ import annotations

import ctypes
import os
import platform
import struct

SLICE_NS = 100_000  # the shortest scheduler slice Linux grants (EEVDF's custom slice)
SCHED_SETATTR = {"x86_64": 314, "aarch64": 274, "riscv64": 274, "ppc64le": 355, "s390x": 345}
# struct sched_attr: size, policy, flags, nice, priority, runtime (the slice), deadline, period
SCHED_ATTR = struct.Struct("=IIQiIQQQ")
SCHED_FLAG_KEEP_POLICY = 0x08


def batch_policy() -> bool:
    """Run this process, and the children it forks, under SCHED_BATCH: a fair share of a
    busy core, but never preempting a task on waking (the server's threads preempt it).

    Returns:
        Whether the kernel accepted it (elsewhere loads run as ordinary tasks).
    """
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError):  # not Linux, or refused
        return False
    return True


def short_slices(slice_ns: int) -> bool:
    """Ask the kernel to run this process, and the children it forks, in slices of
    ``slice_ns``, keeping its scheduling policy and niceness.

    Args:
        slice_ns: nanoseconds; Linux clamps it to 0.1-100 ms.

    Returns:
        Whether the kernel accepted it (kernels before 6.12 accept it and keep their
        default slice).
    """
    number = SCHED_SETATTR.get(platform.machine())
    if number is None:
        return False
    attr = SCHED_ATTR.pack(
        SCHED_ATTR.size, 0, SCHED_FLAG_KEEP_POLICY, os.nice(0), 0, slice_ns, 0, 0
    )
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.syscall(number, 0, ctypes.create_string_buffer(attr), 0)) == 0
