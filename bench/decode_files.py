"""One process decoding crawl files with msgspec, the yardstick of a cold history:
``python bench/decode_files.py FOLDER`` reads and decodes every ``<timestamp>.json`` in it,
oldest first, and prints the files decoded and the seconds that took."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import msgspec


def decode_all(folder: Path) -> tuple[int, float]:
    started = time.perf_counter()
    paths = sorted(
        (p for p in folder.glob("*.json") if p.stem.isdigit()), key=lambda p: int(p.stem)
    )
    for path in paths:
        msgspec.json.decode(path.read_bytes())
    return len(paths), time.perf_counter() - started


if __name__ == "__main__":
    files, seconds = decode_all(Path(sys.argv[1]))
    print(files, f"{seconds:.6f}")
