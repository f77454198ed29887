"""Successful live checks handed to the bitnodes bridge, which alone holds Redis'
credentials: serve leaves each as a small file in the hand-off folder (written under a
hidden name, then renamed: the bridge never sees half a file), and the bridge reads them,
adds them to bitnodes' ``check`` set and removes them. The folder holds at most
``MAX_FILES``: past that, checks are not handed over until the bridge catches up.

Two users: serve writes, the bridge reads and removes; the folder is shared by a group
(mode 2770, setgid so that files take its group) and files are written 0640.
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path
from typing import Annotated

import msgspec

log = logging.getLogger(__name__)
MAX_FILES = 10_000
MAX_FILE_BYTES = 4096  # a hand-off file is about 100 bytes: anything larger is not one
SUFFIX = ".json"
FILE_MODE = 0o640


class HandedCheck(msgspec.Struct, forbid_unknown_fields=True):
    """One successful check, as the file holds it."""

    address: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    port: Annotated[int, msgspec.Meta(ge=1, le=65535)]
    services: Annotated[int, msgspec.Meta(ge=0)]
    checked_at: Annotated[int, msgspec.Meta(ge=0)]


class Handoff:
    """Serve's side: leaves each successful check in ``folder``."""

    def __init__(self, folder: Path, max_files: int = MAX_FILES) -> None:
        self.folder, self.max_files = folder, max_files
        self._full_said = False

    def leave(self, check: HandedCheck) -> bool:
        """Write ``check`` as a new file (blocking: run it in a thread).

        Args:
            check: the check to hand over.

        Returns:
            Whether it was written: not when the folder is full or cannot be written (logged).
        """
        try:
            if _count_files(self.folder, self.max_files) >= self.max_files:
                if not self._full_said:
                    log.warning(
                        "check hand-off folder %s is full; is the bridge running?", self.folder
                    )
                self._full_said = True
                return False
            self._full_said = False
            name = f"{check.checked_at}-{secrets.token_hex(6)}{SUFFIX}"
            hidden = self.folder / f".{name}.tmp"
            descriptor = os.open(hidden, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
            with os.fdopen(descriptor, "wb") as file:
                os.fchmod(file.fileno(), FILE_MODE)  # whatever the umask
                file.write(msgspec.json.encode(check))
            os.replace(hidden, self.folder / name)
        except OSError as exc:
            log.warning("cannot hand a check over in %s: %s", self.folder, exc)
            return False
        return True


def _count_files(folder: Path, stop_at: int) -> int:
    count = 0
    with os.scandir(folder) as entries:
        for _ in entries:
            count += 1
            if count >= stop_at:
                break
    return count
