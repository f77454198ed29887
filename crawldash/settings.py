"""The settings a running crawldash is built from."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/crawldash``, or ``~/.local/state/crawldash``."""
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "crawldash"


@dataclass(frozen=True)
class Settings:
    data_dir: Path = Path("data")
    host: str = "127.0.0.1"
    port: int = 8080
    history_size: int = 8640
    state_dir: Path | None = None  # None: default_state_dir()
    stale_after: int | None = None  # None: three times the median crawl interval, >= 1800
    stuck_after: int = 3600
    max_file_size: int = 256 * 1024 * 1024
    log_level: str = "info"
    cache_max_age: int | None = None  # None: until the next crawl is expected
    cors_origins: tuple[str, ...] = ()
    keepalive_timeout: float = 15.0
    access_log: bool = True
    max_subscribers: int = 100
    workers: int = 1
    heartbeat: float = 15.0
    debounce_ms: int = 300
    force_polling: bool = False

    @property
    def resolved_state_dir(self) -> Path:
        return self.state_dir if self.state_dir is not None else default_state_dir()
