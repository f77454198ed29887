"""A new crawl as the loader process loads it: the crawl, with every answer but what
follows it (the compressed codings of its bodies, its CSV records), is sent to the server
ahead of the reply, so that the server switches to it at once; its map is made at the
same time in a process forked beside (``process.forked``), which sends it ahead too. The
reply is what follows.

After each load the loader process itself reads the crawl again (``learn_crawl``), so
that the child loading the next one finds each host's canonical spelling in its cache and
what this crawl said of each node: it sends each node's changes with the crawl
(``snapshot/node_changes.py``), and the server need not compare the two."""

from __future__ import annotations

import os
from pathlib import Path

from ...crawl.decode import Rules
from ..snapshot.making import in_two
from ..snapshot.node_changes import Known, known_of
from ..snapshot.prepared import Later, PreparedSnapshot, read_snapshot
from .process import AFTERWARDS, forked, send_part, sends_parts

_known: Known | None = None  # in the loader process: the last crawl learned


def load_new_crawl(path: Path, rules: Rules) -> PreparedSnapshot | Later:
    """Read, decode and prepare a crawl; where it runs in a child of the loader process,
    the crawl goes ahead of the reply (``process.send_part``), in two halves made side by
    side, and the reply is what follows it (in a thread, there is nothing to send it
    ahead of).

    Args:
        path: the crawl file.
        rules: what a crawl must be to be served.

    Returns:
        What follows the crawl sent ahead; or, if it could not be sent ahead, the whole
        crawl.
    """
    snapshot, version = read_snapshot(path, rules)
    if not sends_parts():  # in a thread: the crawl is made here, whole
        served, later = in_two(snapshot, version)
        assert served is not None
        later.add_to(served)
        return served
    cores = len(os.sched_getaffinity(0))  # 1: the loader shares the server's one core
    return in_two(snapshot, version, send_part, forked, cores, _known)[1]


def learn_crawl(path: Path, rules: Rules) -> None:
    """In the loader process itself, after a crawl's load: the crawl read again, so that
    the child that loads the next crawl, forked from it, finds each host's canonical
    spelling in its cache (consecutive crawls share most of their hosts; one new to the
    cache costs microseconds, on the way to the crawl's being served) and what this crawl
    said of each node (``_known``). A crawl that does not read leaves what was known."""
    global _known
    try:
        snapshot, version = read_snapshot(path, rules)
    except Exception:  # gone, rewritten, refused: the load's reply said so
        return
    _known = known_of(snapshot.timestamp, version, snapshot.nodes)


AFTERWARDS[f"{load_new_crawl.__module__}.{load_new_crawl.__qualname__}"] = learn_crawl
