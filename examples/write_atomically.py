"""How a crawler should write its output so that crawldash never sees it half-written.

Write the whole file under a temporary name in the same folder, flush it to disk, then
rename it over the final name: a rename within one file system is atomic, so a reader sees
either the old file or the new one. crawldash ignores names that are not
``<unix-seconds>.json`` or ``status.json``, so a leading dot and a ``.tmp`` suffix keep the
temporary file out of its sight.

    python examples/write_atomically.py /path/to/data-dir
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def write_atomically(path: Path, data: bytes) -> None:
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def write_crawl(data_dir: Path, timestamp: int, rows: list[list[Any]]) -> Path:
    """A crawl in the bitnodes export form: one 15-element row per node."""
    path = data_dir / f"{timestamp}.json"
    write_atomically(path, json.dumps(rows).encode())
    return path


def write_status(data_dir: Path, state: str, queue_size: int, height: int, elapsed: float) -> None:
    status = {
        "state": state,
        "queue_size": queue_size,
        "height": height,
        "last_elapsed": elapsed,
        "updated_at": int(time.time()),
    }
    write_atomically(data_dir / "status.json", json.dumps(status).encode())


def main() -> None:
    data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "data")
    data_dir.mkdir(parents=True, exist_ok=True)
    row = [
        "203.0.113.5",
        8333,
        70016,
        "/Satoshi:27.1.0/",
        int(time.time()) - 86400,
        1033,
        925_000,
        None,
        "Berlin",
        "DE",
        52.52,
        13.405,
        "Europe/Berlin",
        "AS3320",
        "Telekom",
    ]
    print(write_crawl(data_dir, int(time.time()), [row]))
    write_status(data_dir, "running", queue_size=0, height=925_000, elapsed=1.5)


if __name__ == "__main__":
    main()
