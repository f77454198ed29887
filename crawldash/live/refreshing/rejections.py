"""Crawler files that must not be served, remembered by version so each is logged once.

Some rejections say nothing of the file: the loader process died or hung while loading it,
or it could not be read just then. Those are passing faults, tried again with back-off
(RETRY_FIRST seconds, doubling to RETRY_MOST) up to TRIES times; a file rejected for its
content is tried again only when it changes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

from ...crawl.files import FileVersion, LoadError

log = logging.getLogger(__name__)
SETTLE_SECONDS = 2.0  # a file changed more recently than this may still be being written
# Kinds that further writing cannot mend, or that say nothing of the file: logged at once,
# however fresh the entry. (A file still being written fails to decode: it never reaches
# the preparing that ``unprepared`` speaks of.)
_SETTLED_KINDS = frozenset(
    ("future", "not_a_file", "unreadable", "misnamed", "timeout", "loader_died", "unprepared")
)
PASSING_KINDS = frozenset(("loader_died", "timeout", "unreadable"))
RETRY_FIRST = 5.0
RETRY_MOST = 300.0
TRIES = 6


@dataclass(frozen=True)
class _Rejected:
    version: FileVersion
    logged: bool
    kind: str
    tries: int = 1  # of a passing fault: times it happened to this version
    retry_at: float = 0.0  # of a passing fault: when it is tried again


class Rejections:
    """Rejected file versions. A fresh one (perhaps still being written) is not logged yet:
    it is looked at again on the next refresh, and logged then if it is still unusable."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._versions: dict[str, _Rejected] = {}
        self.unsettled = False  # some rejected file was fresh: refresh again soon
        self.counts: dict[str, int] = {}  # file versions rejected (and logged), by kind

    def __contains__(self, name: object) -> bool:
        return name in self._versions

    def known(self, name: str, version: FileVersion) -> bool:
        """True if this very version was rejected and is not to be read again yet. Crawls
        named from the future are not: whether they still are is the clock's answer, each
        time; nor is a passing fault whose retry is due."""
        seen = self._versions.get(name)
        if seen is None or seen.version != version or seen.kind == "future":
            return False
        return not self._due(seen)

    def retrying(self, name: str, version: FileVersion) -> bool:
        """True if this version was rejected for a passing fault that is to be tried again."""
        seen = self._versions.get(name)
        return seen is not None and seen.version == version and self._will_retry(seen)

    def retry_due(self) -> bool:
        """True if some passing fault is to be tried again now."""
        return any(self._due(seen) for seen in self._versions.values())

    def add(self, name: str, version: FileVersion, error: LoadError) -> None:
        now = self._clock()
        fresh = now - version.mtime_ns / 1e9 < SETTLE_SECONDS
        settled = error.kind in _SETTLED_KINDS or not fresh
        seen = self._versions.get(name)
        again = seen is not None and seen.version == version and seen.kind == error.kind
        logged = again and seen is not None and seen.logged
        tries = seen.tries + 1 if again and seen is not None else 1
        if settled and not logged:
            retried = "; it is tried again later" if error.kind in PASSING_KINDS else ""
            log.warning(
                "file rejected name=%s kind=%s reason=%s; the last good data stays in service%s",
                name,
                error.kind,
                error,
                retried,
            )
            self.counts[error.kind] = self.counts.get(error.kind, 0) + 1
        elif error.kind in PASSING_KINDS and tries == TRIES:
            log.warning(
                "file rejected name=%s kind=%s %d times; not tried again until it changes",
                name,
                error.kind,
                tries,
            )
        retry_at = now + min(RETRY_FIRST * 2 ** (tries - 1), RETRY_MOST)
        self._versions[name] = _Rejected(version, settled or logged, error.kind, tries, retry_at)
        self.unsettled |= not settled

    def begin_refresh(self, present: Collection[str]) -> None:
        """Forget files that are gone, and unsettled ones, so that they are read again."""
        self._versions = {
            name: seen for name, seen in self._versions.items() if seen.logged and name in present
        }
        self.unsettled = False

    def _will_retry(self, seen: _Rejected) -> bool:
        return seen.kind in PASSING_KINDS and seen.tries < TRIES

    def _due(self, seen: _Rejected) -> bool:
        return self._will_retry(seen) and self._clock() >= seen.retry_at
