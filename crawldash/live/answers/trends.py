"""The history by a key of the breakdowns: each crawl's nodes with each of the values most
common in the newest crawl asked for, or whose user agent holds a text; and the history
in every shape as CSV, one row per crawl.

Each answer is built on its first request after the history changes and kept until the
next change (within a budget of bytes): a chart polled by many is one lookup a request.
An answer reads every crawl asked for, thousands of them: it is made in steps of
CRAWLS_PER_STEP crawls, so that a caller on the event loop answers cheap requests between
two. Points counted before crawldash kept counts by value carry none: nothing is invented.
CSV cells that a spreadsheet would run as a formula are neutralised (``csv_safe``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Hashable, Sequence
from itertools import islice
from typing import TypeVar

import msgspec

from ...crawl.address import NETWORKS
from ...models import CountsPoint, HistoryPoint, MatchPoint
from ..bodies import Representation, represent
from ..snapshot.csv_records import csv_safe
from ..stores.history import COMPRESSED_COUNTS, History, HistoryEntry
from ..stores.tallies import KEYS, UNKNOWN, WHOLE, Values, counts_of
from .kept import KeptAnswers, Steps, at_once, body_size, encoded_steps

DEFAULT_TOP = 10
MAX_TOP = 50
NO_OTHER = "services"  # a node counts once per bit it sets: the rest is no number of nodes
RESERVED = ("unknown", "other")  # the names of the columns after the values shown
# Crawls counted, or points written, between two yields: a fraction of a millisecond. A
# cheap request waits a few steps (its read, its handler, its write each take a turn of
# the loop), so a step is what its latency grows by, several times over.
CRAWLS_PER_STEP = 32
# Bytes of answers kept per change of the history, unless the server is told otherwise.
DEFAULT_MAX_BYTES = 32 * 1024**2
_encoder = msgspec.json.Encoder()
Row = list[int] | None  # a crawl's numbers, or None where it has no counts by value
N = TypeVar("N")  # what a crawl's point is made from
Point = HistoryPoint | CountsPoint | MatchPoint


class Trends:
    """The history's answers by value, kept until the history changes. Each is made in
    steps (``*_steps``, for the event loop) or at once (for callers off it)."""

    def __init__(self, history: History, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.history = history
        self.answers = KeptAnswers[Representation](max_bytes, body_size)

    def keep_at_most(self, max_bytes: int) -> None:
        """Keep answers up to ``max_bytes`` of them from now on."""
        self.answers.max_bytes = max_bytes

    def counts(self, key: str, top: int, limit: int, coding: str = "identity") -> Representation:
        """``counts_steps``'s answer, made at once."""
        return at_once(self.counts_steps(key, top, limit, coding))

    def matched(self, text: str, limit: int) -> Representation:
        """``matched_steps``'s answer, made at once."""
        return at_once(self.matched_steps(text, limit))

    def csv(self, by: str | None, top: int, match: str | None, limit: int) -> Representation:
        """``csv_steps``'s answer, made at once."""
        return at_once(self.csv_steps(by, top, match, limit))

    def counts_steps(
        self, key: str, top: int, limit: int, coding: str = "identity"
    ) -> Steps[Representation]:
        """The most recent ``limit`` points with their ``counts`` by ``key`` (oldest first).

        Args:
            key: one of tallies.KEYS.
            top: how many of the newest counted crawl's values are shown (1 to MAX_TOP).
            limit: how many of the most recent crawls.
            coding: identity, gzip or br: the default ``top`` of the lengths of
                COMPRESSED_COUNTS (and all that is held) is compressed, once per change;
                other answers go uncompressed, so that no query compresses per request.

        Returns:
            The JSON array of points, made in steps.
        """
        count = min(limit, len(self.history))
        if top != DEFAULT_TOP or (count not in COMPRESSED_COUNTS and count != len(self.history)):
            coding = "identity"
        if coding != "identity":
            return (
                yield from self._kept(
                    ("counts", key, top, count, coding),
                    lambda: self._compressed(key, count, coding),
                )
            )
        return (
            yield from self._kept(
                ("counts", key, top, count), lambda: self._json_counts(key, top, count)
            )
        )

    def matched_steps(self, text: str, limit: int) -> Steps[Representation]:
        """The most recent ``limit`` points with the number of nodes ``matched``: whose
        user agent holds ``text``, in any case (oldest first), made in steps."""
        count = min(limit, len(self.history))
        ask = ("matched", text.lower(), count)
        return (yield from self._kept(ask, lambda: self._json_matched(text, count)))

    def csv_steps(
        self, by: str | None, top: int, match: str | None, limit: int
    ) -> Steps[Representation]:
        """The history as CSV: one row per crawl, ``timestamp``, ``reachable``, then one
        column per network (``by=network``), per value (another ``by``) or ``matched``;
        empty cells where a crawl was counted before crawldash kept those. Made in steps."""
        count = min(limit, len(self.history))
        ask = ("csv", by, top, match and match.lower(), count)
        return (yield from self._kept(ask, lambda: self._csv(by, top, match, count)))

    def _kept(
        self, ask: Hashable, make: Callable[[], Steps[Representation]]
    ) -> Steps[Representation]:
        """The answer kept for ``ask``, else made (in steps) and kept. The first step only
        looks it up; it is looked up again after it, when a caller's turn has come: a
        request that waited behind the same question takes the answer made for it."""
        answer = self.answers.get(ask, self.history.changes)
        if answer is None:
            yield
            changes = self.history.changes
            answer = self.answers.get(ask, changes)
            if answer is None:
                answer = yield from make()
                self.answers.put(ask, changes, answer)
        return answer

    def _compressed(self, key: str, count: int, coding: str) -> Steps[Representation]:
        identity = yield from self.counts_steps(key, DEFAULT_TOP, count)
        return (yield from encoded_steps(identity, coding))

    def _json_counts(self, key: str, top: int, count: int) -> Steps[Representation]:
        recent, changed_at = self.history.recent(count), self.history.changed_at
        names, rows = yield from columns(self.history.values, key, top, recent)

        def point(e: HistoryEntry, row: Row) -> Point:
            if row is None:
                return HistoryPoint(e.timestamp, e.reachable)
            return CountsPoint(e.timestamp, e.reachable, dict(zip(names, row, strict=True)))

        return represent((yield from _json_array(point, recent, rows)), changed_at)

    def _json_matched(self, text: str, count: int) -> Steps[Representation]:
        recent, changed_at = self.history.recent(count), self.history.changed_at
        numbers = yield from matched(self.history.values, text, recent)

        def point(e: HistoryEntry, n: int | None) -> Point:
            if n is None:
                return HistoryPoint(e.timestamp, e.reachable)
            return MatchPoint(e.timestamp, e.reachable, n)

        return represent((yield from _json_array(point, recent, numbers)), changed_at)

    def _csv(
        self, by: str | None, top: int, match: str | None, count: int
    ) -> Steps[Representation]:
        recent, changed_at = self.history.recent(count), self.history.changed_at
        names: Sequence[str] = ()
        rows: list[Row] = [None] * len(recent)
        if match is not None:
            names = ["matched"]
            numbers = yield from matched(self.history.values, match, recent)
            rows = [None if n is None else [n] for n in numbers]
        elif by == "network":
            names = NETWORKS
            rows = [None if e.networks is None else list(e.networks) for e in recent]
        elif by is not None:
            names, rows = yield from columns(self.history.values, by, top, recent)
        text = io.StringIO()
        # CRLF, as RFC 4180 and the nodes CSV: the csv module quotes a field holding a CR
        # only where CR ends its lines, and a user agent may hold one.
        out = csv.writer(text, lineterminator="\r\n")
        out.writerow(["timestamp", "reachable", *map(csv_safe, names)])
        empty = [""] * len(names)
        for start in range(0, len(recent), CRAWLS_PER_STEP):
            if start:
                yield
            out.writerows(
                [e.timestamp, e.reachable, *(empty if row is None else row)]
                for e, row in islice(zip(recent, rows, strict=True), start, start + CRAWLS_PER_STEP)
            )
        return represent(text.getvalue().encode(), changed_at)


def _json_array(
    point: Callable[[HistoryEntry, N], Point], recent: list[HistoryEntry], numbers: list[N]
) -> Steps[bytes]:
    """Each crawl's point as one JSON array, CRAWLS_PER_STEP points made and encoded a
    step: points are objects the collector tracks, so only a step's are alive at once."""
    parts = []
    for start in range(0, len(recent), CRAWLS_PER_STEP):
        if start:
            yield
        end = start + CRAWLS_PER_STEP
        points = list(map(point, recent[start:end], numbers[start:end]))
        parts.append(_encoder.encode(points)[1:-1])
    return b"[" + b",".join(parts) + b"]"


def columns(
    values: Values, key: str, top: int, recent: list[HistoryEntry]
) -> Steps[tuple[list[str], list[Row]]]:
    """The columns of the history by ``key`` and each crawl's numbers in them, counted
    CRAWLS_PER_STEP crawls a step.

    Args:
        values: the table the crawls' counts name.
        key: one of KEYS.
        top: how many values to show.
        recent: the crawls, oldest first.

    Returns:
        The names: the ``top`` values with most nodes in the newest crawl that has counts
        (ties by value; a value spelled like a column after them counts as other), then
        ``unknown`` and, but for services, ``other``; and each crawl's numbers in that
        order (other: its nodes less those shown), None for a crawl without counts.
    """
    index = KEYS.index(key)
    newest = next((e.counts for e in reversed(recent) if e.counts is not None), None)
    if newest is None:
        return [], [None] * len(recent)
    latest = counts_of(newest, index)
    ranked = [
        (-nodes, values.name(index, code), code)
        for code, nodes in latest.items()
        if code != UNKNOWN and values.name(index, code) not in RESERVED
    ]
    shown = sorted(ranked)[:top]
    codes = [code for _, _, code in shown]
    names = [name for _, name, _ in shown] + ["unknown"] + ([] if key == NO_OTHER else ["other"])
    rows: list[Row] = []
    for at, entry in enumerate(recent):
        if at and not at % CRAWLS_PER_STEP:
            yield
        if entry.counts is None:
            rows.append(None)
            continue
        counted = counts_of(entry.counts, index)
        row = [counted.get(code, 0) for code in codes]
        unknown = counted.get(UNKNOWN, 0)
        other = [] if key == NO_OTHER else [entry.reachable - sum(row) - unknown]
        rows.append([*row, unknown, *other])
    return names, rows


def matched(values: Values, text: str, recent: list[HistoryEntry]) -> Steps[list[int | None]]:
    """Each crawl's nodes whose user agent holds ``text`` in any case (None without
    counts), counted CRAWLS_PER_STEP crawls a step."""
    codes = values.matching(text)
    index = KEYS.index(WHOLE)
    numbers: list[int | None] = []
    for at, entry in enumerate(recent):
        if at and not at % CRAWLS_PER_STEP:
            yield
        if entry.counts is None:
            numbers.append(None)
        else:
            counted = counts_of(entry.counts, index)
            numbers.append(sum(nodes for code, nodes in counted.items() if code in codes))
    return numbers
