"""crawl/atomic.py: a file of crawldash's own written whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

from crawldash.crawl.atomic import write_atomically


def test_write_atomically_leaves_the_file_readable_and_no_temporary(tmp_path: Path):
    path = tmp_path / "sub" / "out.bin"
    write_atomically(path, b"one")
    write_atomically(path, b"two")
    assert path.read_bytes() == b"two"
    assert os.listdir(path.parent) == ["out.bin"]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_write_atomically_writes_its_parts_in_order(tmp_path: Path):
    path = tmp_path / "out.json"
    write_atomically(path, b'{"a":', bytearray(b"[1,2]"), b"}")
    assert path.read_bytes() == b'{"a":[1,2]}'
