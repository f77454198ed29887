"""A new crawl's switch: the moment from which every answer is about it.

The loader process sends the crawl ahead of its reply, with every answer but the
compressed codings of its bodies (``loader/new_crawl.py``). As soon as it arrives, what the
server keeps of it is made ready without being shown (the crawls skipped while another
loaded are counted, the presence's bits for it set but not published), and then, in one
step on the event loop, the state serves it (``State.switch_to``): the snapshot, the
status, the history, the presence, every answer built from them, and the event stream all
change together, and so does the evidence of the crawl paired with it (``/api/check``'s
reason), read while the crawl loads. Each node's changes since the crawl before
(``/api/profile``) are found in a thread from the moment the half holding its catalog
comes, and taken in after the step (a profile asked for meanwhile waits for them). What
follows the crawl comes with the reply (its codings, each made on request meanwhile:
``Codings`` in ``live/bodies.py``; its CSV records, which a CSV asked for meanwhile waits
for).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

from ...crawl.files import FileVersion, Listing
from ...models import Change
from ..answers.profiles import Profiles
from ..answers.reasons import Evidence
from ..bodies import every_coding
from ..snapshot.csv_records import CsvRecords
from ..snapshot.prepared import Half, Later, MapCodings, PreparedSnapshot
from ..state import State
from ..stores.history import HistoryEntry
from .counting import Counting
from .pairing import Pairing

log = logging.getLogger(__name__)
_Found = tuple[int, list[tuple[str, Change]]] | None  # the crawl compared from, the changes


class Switch:
    """Serves each new crawl from one moment, and takes in what follows it."""

    def __init__(
        self,
        state: State,
        counting: Counting,
        changed: Callable[[], None],
        pairing: Pairing | None = None,
    ) -> None:
        self.state = state
        self.counting = counting
        self.changed = changed  # the history or presence changed: save them
        self.pairing = pairing
        self.served: tuple[int, FileVersion] | None = None  # the crawl and file served
        self._switching: asyncio.Task[PreparedSnapshot] | None = None
        self._listing: Listing | None = None
        self._started = 0.0
        self._halves: dict[FileVersion, list[Half]] = {}  # of the crawl being loaded
        self._loading = 0  # the timestamp of the crawl being loaded
        self._compared: asyncio.Future[_Found] | None = None  # its profile changes
        self._evidence: asyncio.Future[Evidence] | None = None  # of the crawl paired with it

    def begin(self, listing: Listing, timestamp: int) -> None:
        """A load of a new crawl begins: of the file ``listing`` names for ``timestamp``."""
        self._switching, self._listing, self._started = None, listing, time.perf_counter()
        self._halves, self._loading, self._compared = {}, timestamp, None
        # Read while the crawl loads, not on the way from its load to its switch: bitnodes
        # writes the crawl paired with an export before the export.
        self._evidence = self._read_evidence(timestamp)

    def on_part(self, part: object) -> None:
        """On the event loop: the loader sent the crawl ahead of what follows it, whole or
        in halves; switch to it once it is all in (once: a load tried again after its
        process died sends it again). A part of another crawl (from a process beside a
        load that died, still running) is dropped."""
        if isinstance(part, MapCodings) and part.timestamp == self._loading:
            for half in self._halves.get(part.version, ()):  # the half it follows
                if "map" in half.fields:
                    half.fields["map"].default.update(part.codings)
            return
        if not isinstance(part, (Half, PreparedSnapshot)) or part.timestamp != self._loading:
            return
        if isinstance(part, Half):
            halves = self._halves.setdefault(part.version, [])  # the file may change
            halves.append(part)  # between two tries of the load
            if "catalog" in part.fields and self._compared is None:  # while the other half
                self._compared = self._compare(part)  # is made
            part = Half.joined(halves)
        if part is not None and self._switching is None:
            self._switching = asyncio.ensure_future(self._switch(part))

    async def end(self, loaded: PreparedSnapshot | Later | None) -> bool:
        """The load's reply came (None: it failed): serve the crawl whole. A crawl switched
        to stays served whatever the reply: an answer never goes back to an older crawl.

        Returns:
            Whether a crawl was served.
        """
        switching, self._switching = self._switching, None
        if switching is not None:
            served = await switching
        elif isinstance(loaded, PreparedSnapshot):  # no part came: loaded in a thread
            served = await self._switch(loaded)
        else:
            return False
        if isinstance(loaded, PreparedSnapshot):
            loaded = _codings_of(loaded)
        if not isinstance(loaded, Later) or not self.state.take_later(loaded):
            log.warning("what follows crawl %d did not come: made here", served.timestamp)
            self.state.take_later(await asyncio.to_thread(_made, served))
        return True

    def _read_evidence(self, timestamp: int) -> asyncio.Future[Evidence] | None:
        """The evidence of the crawl paired with the export ``timestamp``, being read (in a
        thread); None without a pairing."""
        if self.pairing is None:
            return None
        reading = asyncio.ensure_future(self.pairing.evidence_for(timestamp))
        # A load that fails never awaits it: what it raised is not left unretrieved.
        reading.add_done_callback(lambda done: done.cancelled() or done.exception())
        return reading

    def _compare(self, after: PreparedSnapshot | Half) -> asyncio.Future[_Found]:
        """Each node's changes from the crawl served now to ``after`` (found in a thread),
        from the half of a new crawl that holds its catalog and rows, as soon as it is in."""
        before, compare = self.state.snapshot, self.state.profiles.compare
        # What the comparison reads of a crawl: its timestamp, catalog and rows.
        crawl = after if isinstance(after, PreparedSnapshot) else SimpleNamespace(**after.fields)

        async def found() -> _Found:
            if before is None or before.timestamp >= after.timestamp:
                return None
            return before.timestamp, await asyncio.to_thread(compare, before, cast(Any, crawl))

        return asyncio.ensure_future(found())

    async def _switch(self, served: PreparedSnapshot) -> PreparedSnapshot:
        """Make ready what the server keeps of ``served``, then serve it from one moment:
        the crawls skipped before it counted, the evidence of the crawl paired with it
        read, its point made; then take in each node's changes since the crawl before."""
        version = served.version
        assert self._listing is not None
        if await self.counting.count_skipped(self._listing, served.timestamp):
            self.changed()
        profiles = self.state.profiles
        compared = self._compared or self._compare(served)
        early = self._evidence if served.timestamp == self._loading else None
        found = early or self._read_evidence(served.timestamp)
        evidence = Evidence() if found is None else await found
        entry = HistoryEntry(
            served.timestamp,
            served.total_nodes,
            version.size,
            version.mtime_ns,
            served.networks,
            served.latest_height,
            self.state.history.values.pack(
                {by: breakdown.counted for by, breakdown in served.breakdowns.items()}
            ),
        )

        def with_it() -> None:  # in the switch's step
            profiles.expect()
            self.state.checks.set_evidence(evidence)

        if await self.state.switch_to(served, entry, with_it):
            self.changed()
        self.served = (served.timestamp, version)
        log.info(
            "snapshot loaded timestamp=%d nodes=%d skipped_rows=%d height=%d bytes=%d seconds=%.3f",
            served.timestamp,
            served.total_nodes,
            served.skipped_rows,
            served.latest_height,
            version.size,
            time.perf_counter() - self._started,
        )
        await _take_changes(profiles, compared)
        return served


async def _take_changes(profiles: Profiles, compared: asyncio.Future[_Found]) -> None:
    """The changes of the crawl just served, taken in once found (after its switch: they
    are not on the way to it)."""
    found: _Found = None
    try:
        found = await compared
    except Exception:  # the crawl is served all the same; its changes are not kept
        log.exception("comparing the new crawl with the one before failed")
    finally:  # stopped or not, what waits for them is not left waiting
        if found is None:
            profiles.settle()
        else:
            profiles.take(*found)


def _codings_of(whole: PreparedSnapshot) -> Later:
    """The codings of a crawl that came whole (a load that archives it too replies so)."""
    return Later(
        whole.timestamp,
        whole.version,
        {c: r for c, r in whole.representations.items() if c != "identity"},
        {by: dict(b.default) for by, b in whole.breakdowns.items()},
        dict(whole.map.default),
        whole.catalog.records,
    )


def _made(served: PreparedSnapshot) -> Later:
    """The codings of ``served``, made here (its load ended without them)."""
    return Later(
        served.timestamp,
        served.version,
        every_coding(served.representations),
        {by: every_coding(b.default) for by, b in served.breakdowns.items()},
        every_coding(served.map.default),
        CsvRecords.of(served.rows()),
    )
