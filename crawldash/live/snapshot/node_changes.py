"""Each node's changes from one crawl to the next (``/api/profile``), found where the
crawl is made, so that the server takes them in with the crawl instead of comparing two
crawls itself while it answers.

The loader process remembers what the last crawl it loaded said of each node (``Known``,
``known_of``); the child that loads the next crawl compares with it (``changes_since``)
and sends the changes with the crawl, naming the crawl and file version they are from. The
server takes them only if that is the crawl it serves until the switch; otherwise it
compares the two crawls itself (``answers/profiles.py``), with the same rule: a node
changed where one of its ``FIELDS`` differs once letter case is set aside (as the
catalog's columns hold them), and each field that differs as sent is a change.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from ...crawl.files import FileVersion
from ...models import Change, NodeRow

FIELDS = ("user_agent", "protocol_version", "services", "country", "asn")
Said = tuple[str | None, int | None, int, str | None, str | None]  # FIELDS of one node
_said = attrgetter(*FIELDS)


@dataclass(frozen=True)
class Known:
    """What one crawl said of each node: its FIELDS by canonical address."""

    timestamp: int
    version: FileVersion
    said: dict[str, Said]


@dataclass(frozen=True)
class NodeChanges:
    """Each node's changes since crawl ``since`` (of file version ``version``)."""

    since: int
    version: FileVersion
    found: list[tuple[str, Change]]


def known_of(timestamp: int, version: FileVersion, nodes: dict[str, NodeRow]) -> Known:
    """What a crawl said of each node (a pass in C over its rows)."""
    return Known(timestamp, version, dict(zip(nodes, map(_said, nodes.values()), strict=True)))


def changes_since(
    known: Known, timestamp: int, addresses: Sequence[str], rows: Iterable[NodeRow]
) -> NodeChanges:
    """The changes of crawl ``timestamp``'s nodes (``addresses`` and their ``rows``, in the
    same order) since the crawl ``known`` describes."""
    before = known.said.get
    found: list[tuple[str, Change]] = []
    for address, now in zip(addresses, map(_said, rows), strict=True):
        then = before(address)
        if then is not None and then != now and _folded(then) != _folded(now):
            found.extend((address, change) for change in changes(then, now, timestamp))
    return NodeChanges(known.timestamp, known.version, found)


def changes(then: Said, now: Said, crawl: int) -> list[Change]:
    """Each field of one node that differs, as sent."""
    return [
        Change(crawl, name, old, new)
        for name, old, new in zip(FIELDS, then, now, strict=True)
        if old != new
    ]


def _folded(said: Said) -> Said:
    """FIELDS as the catalog's columns compare them: letter case set aside, as is a user
    agent or version not given."""
    agent, version, services, country, asn = said
    return (
        (agent or "").lower(),
        -1 if version is None else version,
        services,
        country.upper() if country else None,
        asn.upper() if asn else None,
    )
