"""A file of crawldash's own written whole or not at all (its state, the demo's and the
bridge's output, the archive's manifests): a reader never sees it half written.

It blocks (file I/O): callers on the event loop run it in a worker thread.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, *parts: bytes | bytearray) -> None:
    """Write ``parts``, one after another, to a temporary file beside ``path``, flush it
    to disk, then rename it over. The file gets the mode an ordinary ``open()`` gives under
    this process's umask (0644 under the usual 022), not the temporary file's 0600: other
    users read it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            for part in parts:
                handle.write(part)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """This process's umask, read without changing it (Linux), else set and restored."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
