"""Small stores for the answers' unit tests: crawls prepared in this process from a few
rows, and a presence of those crawls."""

from __future__ import annotations

import json
from typing import Any

from crawldash.crawl.decode import decode_snapshot
from crawldash.crawl.files import FileVersion
from crawldash.live.snapshot.prepared import PreparedSnapshot
from crawldash.live.stores.presence import Presence


def prepared(timestamp: int, rows: list[list[Any]]) -> PreparedSnapshot:
    """Every answer of a crawl of ``rows`` (export form), made here, in this process."""
    snapshot = decode_snapshot(json.dumps(rows).encode(), timestamp)
    return PreparedSnapshot.prepare(snapshot, FileVersion(len(rows), timestamp))


def presence_of(crawls: dict[int, list[str]]) -> Presence:
    """A presence of crawls by timestamp, each with its canonical addresses."""
    presence = Presence()
    for timestamp, addresses in crawls.items():
        presence.add(timestamp, addresses)
    return presence
