"""Crawler files that must not be served, remembered by version so each is logged once."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection

from ...crawl.files import FileVersion, LoadError

log = logging.getLogger(__name__)
SETTLE_SECONDS = 2.0  # a file changed more recently than this may still be being written
# Kinds that no further writing can mend: logged at once, however fresh the entry.
_SETTLED_KINDS = frozenset(("future", "not_a_file", "unreadable"))


class Rejections:
    """Rejected file versions. A fresh one (perhaps still being written) is not logged yet:
    it is looked at again on the next refresh, and logged then if it is still unusable."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        # name -> (version, logged, kind)
        self._versions: dict[str, tuple[FileVersion, bool, str]] = {}
        self.unsettled = False  # some rejected file was fresh: refresh again soon
        self.counts: dict[str, int] = {}  # file versions rejected (and logged), by kind

    def __contains__(self, name: object) -> bool:
        return name in self._versions

    def known(self, name: str, version: FileVersion) -> bool:
        """True if this very version was rejected: no need to read it again. Crawls named
        from the future are not: whether they still are is the clock's answer, each time."""
        seen = self._versions.get(name)
        return seen is not None and seen[0] == version and seen[2] != "future"

    def add(self, name: str, version: FileVersion, error: LoadError) -> None:
        fresh = self._clock() - version.mtime_ns / 1e9 < SETTLE_SECONDS
        settled = error.kind in _SETTLED_KINDS or not fresh
        seen = self._versions.get(name)
        logged = seen is not None and seen[0] == version and seen[2] == error.kind and seen[1]
        if settled and not logged:
            log.warning(
                "file rejected name=%s kind=%s reason=%s; the last good data stays in service",
                name,
                error.kind,
                error,
            )
            self.counts[error.kind] = self.counts.get(error.kind, 0) + 1
        self._versions[name] = (version, settled or logged, error.kind)
        self.unsettled |= not settled

    def begin_refresh(self, present: Collection[str]) -> None:
        """Forget files that are gone, and unsettled ones, so that they are read again."""
        self._versions = {
            name: seen for name, seen in self._versions.items() if seen[1] and name in present
        }
        self.unsettled = False
