"""A new crawl as the loader process loads it: the crawl, with every answer but what
follows it (the compressed codings of its bodies, its CSV records), is sent to the server
ahead of the reply, so that the server switches to it at once; its map is made at the
same time in a process forked beside (``process.forked``), which sends it ahead too. The
reply is what follows."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from ...crawl.decode import Rules, Snapshot
from ...crawl.files import FileVersion, read_file
from ...crawl.spellings import Spellings
from ..snapshot.making import in_two
from ..snapshot.prepared import Later, PreparedSnapshot, read_snapshot
from .process import AFTERWARDS, forked, send_part, sends_parts


class _Host(msgspec.Struct, array_like=True, forbid_unknown_fields=False, gc=False):
    """A row's host and port (of either array form), the rest of the row left undecoded."""

    address: str
    port: int


# In the loader process, the hosts of the last crawl loaded from each data folder (each
# network's), spelled (``learn_hosts``): the child that loads the next crawl is forked with
# them. One loader serves every network, whose crawls come in turn and share few hosts.
_learned: dict[Path, Spellings] = {}


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
    return prepared(*read_new_crawl(path, rules))


def read_new_crawl(path: Path, rules: Rules) -> tuple[Snapshot, FileVersion]:
    """A new crawl, read and decoded: its hosts spelled from those of the last crawl loaded
    from its folder (``learn_hosts``), with the version of the file read."""
    return read_snapshot(path, rules, _learned.get(path.parent))


def prepared(snapshot: Snapshot, version: FileVersion) -> PreparedSnapshot | Later:
    """A new crawl's answers, as ``load_new_crawl`` returns them (the crawl sent ahead in
    two halves made side by side, where this runs in a child of the loader process)."""
    if not sends_parts():  # in a thread: the crawl is made here, whole
        return PreparedSnapshot.prepare(snapshot, version)
    cores = len(os.sched_getaffinity(0))  # 1: the loader shares the server's one core
    return in_two(snapshot, version, send_part, forked, cores)[1]


def learn_hosts(path: Path, rules: Rules) -> None:
    """In the loader process itself, after a crawl's load: each host of the crawl spelled
    canonically, so that the child that loads the next crawl, forked from it, spells most
    of its rows by a lookup each (consecutive crawls share most of their hosts; spelling
    the others is on the way to the crawl's being served). Only the last crawl's of each
    folder are kept: the memory of the process stays the size of one crawl's hosts per
    network."""
    try:
        data = read_file(path, rules.max_file_size)[0]
        rows = msgspec.json.decode(data, type=list[_Host])
    except (OSError, ValueError, msgspec.DecodeError):  # a crawl in another form, or gone
        return
    learned = Spellings()
    learned.addresses(rows)
    _learned[path.parent] = learned


AFTERWARDS[f"{load_new_crawl.__module__}.{load_new_crawl.__qualname__}"] = learn_hosts
