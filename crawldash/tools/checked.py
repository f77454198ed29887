"""The bridge's side of the live check's hand-off: each successful check serve left in the
hand-off folder is added to bitnodes' ``check`` sorted set (member ``[address, port,
services]`` as bitnodes' ``json.dumps`` writes it, score the check's time), which
``crawl.py`` merges into its next crawl when ``include_checked`` is on; then the file is
removed. A file that holds no check is removed too, and said once per pass."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import redis

from ..checknode.handoff import HandedCheck, read_check, waiting

log = logging.getLogger(__name__)
CHECK_KEY = "check"  # bitnodes' sorted set of checked nodes
BATCH = 1000  # files handed over per pass at most


def member(check: HandedCheck) -> str:
    """bitnodes' member for a checked node: ``json.dumps([address, port, services])``,
    with json's default separators (``["203.0.113.5", 8333, 1037]``)."""
    return json.dumps([check.address, check.port, check.services])


class CheckedCollector:
    """Hands the checks waiting in ``folder`` over to ``client``'s ``check`` set."""

    def __init__(self, client: redis.Redis, folder: Path) -> None:
        self.client, self.folder = client, folder

    def collect(self, now: float) -> None:
        """One pass: every waiting check added (in one round trip), then its file removed.

        Args:
            now: the pass's time (unused: each check keeps its own time as the score).
        """
        paths = waiting(self.folder, BATCH)
        if not paths:
            return
        scores: dict[str, float] = {}
        malformed = []
        for path in paths:
            check = read_check(path)
            if check is None:
                malformed.append(path.name)
            else:
                key = member(check)
                scores[key] = max(scores.get(key, 0), check.checked_at)
        if scores:
            self.client.zadd(CHECK_KEY, scores)  # a RedisError keeps the files for the next pass
        for path in paths:
            path.unlink(missing_ok=True)
        if malformed:
            log.warning(
                "removed %d hand-off files that hold no check: %s", len(malformed), malformed[:3]
            )
        log.debug("handed %d checks to bitnodes' %s set", len(scores), CHECK_KEY)

    def flush(self) -> None:
        """Nothing is kept between passes."""
