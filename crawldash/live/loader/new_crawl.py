"""A new crawl as the loader process loads it: its first answers (the plain snapshot) are
sent to the server ahead of the rest, so that the crawl is served while its indexes,
breakdowns, map and compressed codings are made."""

from __future__ import annotations

from pathlib import Path

from ...crawl.decode import Rules
from ..snapshot.prepared import PreparedSnapshot, load_snapshot
from .process import send_part


def load_new_crawl(path: Path, rules: Rules) -> PreparedSnapshot:
    """``load_snapshot``, sending its FirstAnswers ahead of the reply where it runs in a
    child of the loader process (in a thread, there is nothing to send them ahead of).

    Args:
        path: the crawl file.
        rules: what a crawl must be to be served.

    Returns:
        The crawl, prepared for serving.
    """
    return load_snapshot(path, rules, ahead=send_part)
