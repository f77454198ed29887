"""Archiving each new crawl as the loader decodes it, so that it is decoded once: the
loader's child loads the crawl as any new crawl is loaded (``load_new_crawl``: the crawl
sent ahead in two halves made side by side) and hands it over, and only then (in a
process forked from it, which the loader does not wait for: ``after_reply``) writes the
crawl's part file, compacts a day it completed, and archives any crawl of the folder
still missing (one skipped while another loaded, one whose write failed).

The outcome of each write goes to the state folder (``outcome.py``), for the server.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from ..crawl.decode import Rules, Snapshot
from ..crawl.files import FileVersion
from ..live.loader.new_crawl import learn_hosts, prepared, read_new_crawl
from ..live.loader.process import AFTERWARDS, after_reply
from ..live.snapshot.prepared import Later, PreparedSnapshot
from .layout import CrawlFile, network_dir
from .outcome import record

log = logging.getLogger(__name__)
CATCH_UP_LOCK = ".catching-up"


@dataclass(frozen=True)
class Target:
    """Where one network's crawls are archived, and where the outcome is noted."""

    archive_dir: Path
    network: str
    outcome: Path


def load_and_archive(path: Path, rules: Rules, target: Target) -> PreparedSnapshot | Later:
    """``load_new_crawl`` (the same decode, the crawl sent ahead in two halves made side by
    side), then (after the reply, in the loader) archive the crawl.

    Args:
        path: the crawl file.
        rules: what a crawl file must be.
        target: the network's archive.

    Returns:
        What ``load_new_crawl`` returns.
    """
    snapshot, version = read_new_crawl(path, rules)
    answer = prepared(snapshot, version)
    after_reply(lambda: archive_now(target, snapshot, version, path.parent, rules))
    return answer


def _learn_hosts(path: Path, rules: Rules, _target: Target) -> None:
    learn_hosts(path, rules)


# As after a load that does not archive: the next crawl's hosts are spelled from these.
AFTERWARDS[f"{load_and_archive.__module__}.{load_and_archive.__qualname__}"] = _learn_hosts


def archive_now(
    target: Target, snapshot: Snapshot, version: FileVersion, data_dir: Path, rules: Rules
) -> None:
    """Write the crawl, then the folder's crawls not archived yet; note how it went.
    Under SCHED_IDLE: a load of the next crawl, or the server, always comes first (the
    policy's small weight still gives it a sliver of a core a crawler keeps busy: a
    crawl's write takes a fraction of a second, and crawls come minutes apart)."""
    from .backfill import backfill  # pyarrow: imported here, after the reply
    from .writing import archive_crawl

    with contextlib.suppress(AttributeError, OSError):  # not Linux, or refused
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    try:
        crawl = CrawlFile(version.size, version.mtime_ns)
        archive_crawl(target.archive_dir, target.network, snapshot, crawl)
        del snapshot
        with _catching_up(target) as alone:
            if alone:
                done = backfill(data_dir, target.archive_dir, target.network, rules, processes=1)
                if done.archived:
                    log.info("archived %d crawls that were missing", len(done.archived))
    except Exception as exc:  # noted for the server, which logs it: never raised on
        record(target.outcome, f"{type(exc).__name__}: {exc}")
        return
    record(target.outcome, None)


class _catching_up:
    """Held by one process at a time (others pass): the folder's catch-up."""

    def __init__(self, target: Target) -> None:
        self.path = network_dir(target.archive_dir, target.network) / CATCH_UP_LOCK

    def __enter__(self) -> bool:
        self.handle = open(self.path, "a")  # closed in __exit__
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def __exit__(self, *_: object) -> None:
        self.handle.close()
