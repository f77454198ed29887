"""What the scenarios of one run share: its settings, its data, the state folder that a
crawldash start with a state index uses, the served snapshot, the crawls left to write."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from bench import data
from bench.config import Config
from bench.data import Dataset
from bench.export_shape import ShapedCrawl
from bench.load import free_port
from bench.servers import SERVER_CORE, crawldash, get, server, wait_history


@dataclass(frozen=True)
class Running:
    """A crawldash process that answers."""

    base: str  # http://127.0.0.1:<port>
    process: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.process.pid


@dataclass
class Bench:
    config: Config
    data: Dataset
    following: Iterator[ShapedCrawl]  # the crawls after the newest, one INTERVAL apart
    _state_ready: bool = False
    _snapshot: tuple[str, bytes] | None = field(default=None, repr=False)

    @property
    def log(self) -> Path:
        return self.config.root / "server.log"

    @property
    def state(self) -> Path:
        """The state folder of crawldash's starts with a state index."""
        return self.config.root / "state"

    def fresh_state(self) -> Path:
        """The state folder, emptied: the next start is cold. Call ``state_made`` once a
        crawldash run on it has completed its history and stopped."""
        self._state_ready = False
        return emptied(self.state)

    def state_made(self) -> None:
        self._state_ready = True

    def ready_state(self) -> Path:
        """The state folder with a complete state index, made now if no scenario made it."""
        if not self._state_ready:
            with self.crawldash(self.fresh_state()) as running:
                wait_history(running.base)
            self.state_made()
        return self.state

    @contextmanager
    def crawldash(
        self, state: Path, *extra: str, data_dir: Path | None = None, cores: str = SERVER_CORE
    ) -> Iterator[Running]:
        """crawldash serving ``data_dir`` (the 15,000-node folder by default) on ``cores``,
        from the moment it answers /api/status."""
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        command = crawldash(data_dir or self.data.data15k, port, state, *extra)
        with server(command, base + "/api/status", self.log, cores) as process:
            yield Running(base, process)

    def keep_snapshot(self, etag: str, body: bytes) -> None:
        """The served snapshot (identity), also written for nginx to serve."""
        self._snapshot = etag, body
        data.static_snapshot(self.data.static, body)

    def snapshot(self) -> tuple[str, bytes]:
        """The served snapshot's ETag and body, asked of crawldash now if no scenario has."""
        if self._snapshot is None:
            with self.crawldash(self.ready_state()) as running:
                headers, body = get(running.base + "/api/snapshot", {"Accept-Encoding": "identity"})
            self.keep_snapshot(headers["ETag"], body)
        assert self._snapshot is not None
        return self._snapshot

    def hit(self) -> str:
        """An address the served snapshot lists."""
        return str(next(iter(json.loads(self.snapshot()[1])["nodes"])))

    def take(self, count: int) -> list[tuple[int, bytes]]:
        """The next ``count`` crawls to write, rendered now, so that writing them costs the
        run nothing but the write."""
        taken = [(crawl.timestamp, crawl.body()) for crawl in islice(self.following, count)]
        if len(taken) < count:
            raise RuntimeError(f"{count} crawls asked to write, {len(taken)} left")
        return taken


def emptied(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder
