"""How the archive's last write went, kept in a small file in the state folder: the
archive is written by processes the server does not wait for (the loader's, after each
crawl is handed over), and the server reads this to log a failure once and count it for
``/metrics``."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from ..crawl.atomic import write_atomically


@dataclass(frozen=True)
class Outcome:
    """The archive writes' record: failures in a row, in all, and the last one's reason."""

    failing: int = 0  # writes failed since the last that succeeded
    failures: int = 0  # writes failed, ever (a counter for /metrics)
    error: str | None = None  # the last failure's reason, while failing
    at: float = 0.0  # when the last write ended


def outcome_path(state_dir: Path, network: str) -> Path:
    return state_dir / f"archive-{network}.json"


def read_outcome(path: Path) -> Outcome:
    try:
        recorded = json.loads(path.read_bytes())
        return Outcome(
            int(recorded["failing"]),
            int(recorded["failures"]),
            recorded["error"],
            float(recorded["at"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return Outcome()


def record(path: Path, error: str | None) -> None:
    """Note a write's end: ``error`` is its reason if it failed, None if it succeeded."""
    before = read_outcome(path)
    failed = error is not None
    after = Outcome(
        before.failing + 1 if failed else 0,
        before.failures + int(failed),
        error,
        time.time(),
    )
    body = {"failing": after.failing, "failures": after.failures, "error": error, "at": after.at}
    write_atomically(path, json.dumps(body).encode())
