"""Work for the loader process in tests: importable by name, as a spawned process needs."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def die_the_first_time(marker: str) -> int:
    """Kill this process the first time (leaving ``marker``); then return its pid."""
    if not Path(marker).exists():
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return os.getpid()
