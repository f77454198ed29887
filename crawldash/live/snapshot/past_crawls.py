"""Older crawls, served whole as bitnodes API v1 snapshots: each one decoded and encoded on
its first request, in the loader process, then kept in a small cache; each content coding is
compressed on its first request (off the loop), then kept with it.

A crawl never changes once written, so an entry stays good while its file's version (size
and modification time, as the latest listing of the folder saw them) is the one it was made
from; a file rewritten is made again, a file gone is forgotten.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Protocol

import msgspec

from ...crawl.decode import Rules, Snapshot, decode_snapshot
from ...crawl.files import FileVersion, LoadError, read_file
from ...models import ApiSnapshot, Base
from ..bodies import MadeOnce, Representation, represent

log = logging.getLogger(__name__)
ARCHIVE_SIZE = 4  # older crawls kept, each in the codings asked: memory bounds how many
ARCHIVE_WAIT = 10.0  # seconds: far past a load on an idle core; past it, something is wrong
FIELDS = ("coordinates", "user_agents")  # the summary forms of ?field=
_encoder = msgspec.json.Encoder()


class _Coordinates(Base, frozen=True):
    timestamp: int
    total_nodes: int
    latest_height: int
    coordinates: list[tuple[float, float]]


class _UserAgents(Base, frozen=True):
    timestamp: int
    total_nodes: int
    latest_height: int
    user_agents: list[str]


@dataclass(frozen=True)
class ArchivedSnapshot:
    """One crawl in every v1 form (the whole snapshot, and each ``field``), the file version
    it was made from, and the content codings made so far (``Archive.representation``)."""

    version: FileVersion
    forms: dict[str | None, Representation]  # identity, by field (None: whole)
    coded: dict[tuple[str | None, str], Representation] = field(
        default_factory=dict, compare=False
    )  # by field and coding, each made on its first request: most clients ask for one


def summaries(snapshot: Snapshot, modified: float) -> dict[str | None, Representation]:
    """The ``?field=`` forms of a crawl: its unique coordinates and unique user agents,
    sorted, after the crawl's timestamp, node count and height."""
    head = (snapshot.timestamp, len(snapshot.nodes), snapshot.latest_height)
    nodes = snapshot.nodes.values()
    coordinates = sorted(  # a node without them (a crawl-only row) has no place on a map
        {
            (latitude, longitude)
            for node in nodes
            if (latitude := node.latitude) is not None and (longitude := node.longitude) is not None
        }
    )
    agents = sorted({node.user_agent for node in nodes if node.user_agent is not None})
    return {
        "coordinates": represent(_encoder.encode(_Coordinates(*head, coordinates)), modified),
        "user_agents": represent(_encoder.encode(_UserAgents(*head, agents)), modified),
    }


def load_archived(path: Path, timestamp: int, rules: Rules) -> ArchivedSnapshot:
    """Read, decode and encode a crawl file in every form: what the loader process runs."""
    data, version = read_file(path, rules.max_file_size)
    return archived_of(decode_snapshot(data, timestamp, rules.allow_empty), version)


def archived_of(snapshot: Snapshot, version: FileVersion) -> ArchivedSnapshot:
    """A decoded crawl in every form, as served for the file ``version`` it was read from
    (also what the Parquet archive gives back for a pruned crawl: ``crawldash/archive/``)."""
    timestamp, modified = snapshot.timestamp, version.mtime_ns / 1e9
    api = ApiSnapshot(timestamp, len(snapshot.nodes), snapshot.latest_height, snapshot.nodes)
    whole = represent(_encoder.encode(api), modified)
    return ArchivedSnapshot(version, {None: whole, **summaries(snapshot, modified)})


Load = Callable[[Path, int], Awaitable[ArchivedSnapshot]]


class Kept(Protocol):
    """Crawls kept past their files (the Parquet archive, ``crawldash/archive/``)."""

    changes: int  # counts changes of the crawls kept

    def listed(self, files: list[int]) -> list[int]:
        """The crawls of ``files`` (newest first) and those kept, newest first."""

    def counted(self, timestamp: int) -> tuple[int, int | None] | None:
        """A kept crawl's nodes and consensus height, if known."""

    async def load(self, timestamp: int) -> ArchivedSnapshot | None:
        """A kept crawl in every form, or None."""


class ArchiveBusy(Exception):
    """The crawl asked for is still loading (behind other loads, or a loader that hangs)
    after ``seconds``: the request is answered at once rather than held."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the crawl is still being loaded after {seconds:g} s")
        self.seconds = seconds


class Archive:
    """The older crawls asked for, ``ARCHIVE_SIZE`` at most, least recently used dropped.

    ``load`` runs ``load_archived`` in the loader process; one load at a time, and
    concurrent requests for one crawl share its load.
    """

    def __init__(self, data_dir: Path, load: Load, size: int = ARCHIVE_SIZE) -> None:
        self.data_dir, self.load, self.size = data_dir, load, size
        self.wait = ARCHIVE_WAIT  # seconds a request waits for a load, then is told to retry
        self._kept: OrderedDict[int, ArchivedSnapshot] = OrderedDict()
        self._loading: dict[int, asyncio.Future[ArchivedSnapshot | None]] = {}
        self._codings = MadeOnce()  # made on request, once however many ask meanwhile
        self._one_at_a_time = asyncio.Lock()
        self._reported: set[tuple[int, FileVersion | None]] = set()  # unusable files, logged once
        self.kept: Kept | None = None  # crawls whose files are gone, from the archive

    def listed(self, files: list[int]) -> list[int]:
        """The crawls that can be served, newest first: ``files``, and those kept."""
        return files if self.kept is None else self.kept.listed(files)

    def counted(self, timestamp: int) -> tuple[int, int | None] | None:
        """A kept crawl's nodes and height (what lists a crawl the history lacks), if known."""
        return None if self.kept is None else self.kept.counted(timestamp)

    async def get(
        self, timestamp: int, files: Mapping[int, tuple[str, FileVersion]]
    ) -> ArchivedSnapshot | None:
        """The crawl of ``timestamp`` if its file is in ``files`` (the latest listing) and
        usable; None if not, the reason logged once per version of the file."""
        listed = files.get(timestamp)
        if listed is None:
            if self.kept is None:
                self._kept.pop(timestamp, None)
                return None
            return await self._from_kept(timestamp, self.kept)
        name, version = listed
        kept = self._kept.get(timestamp)
        if kept is not None and kept.version == version:
            self._kept.move_to_end(timestamp)
            return kept
        if (timestamp, version) in self._reported:
            return None
        loading = self._loading.get(timestamp)
        if loading is None:
            loading = asyncio.ensure_future(self._load(timestamp, name))
            self._loading[timestamp] = loading
            loading.add_done_callback(partial(self._loaded, timestamp))
        try:
            return await asyncio.wait_for(asyncio.shield(loading), self.wait)
        except TimeoutError:  # the load goes on, for the next request to find
            raise ArchiveBusy(self.wait) from None
        except FileNotFoundError:  # removed since it was listed: kept, maybe
            return None if self.kept is None else await self._from_kept(timestamp, self.kept)
        except LoadError as exc:
            if exc.of_the_loader:  # not the file's fault: the next request tries it again
                return None
            if (timestamp, version) not in self._reported:
                self._reported.add((timestamp, version))
                log.warning(
                    "crawl %s (%s) cannot be served from the archive: %s", timestamp, name, exc
                )
            return None

    async def representation(
        self, archived: ArchivedSnapshot, form: str | None, coding: str
    ) -> Representation:
        """A form of a crawl ``get`` gave in a content coding, compressed in a thread on its
        first request (brotli and zlib let go of the GIL) and kept for the next.

        Args:
            archived: the crawl.
            form: the ``field`` asked for, or None for the whole snapshot.
            coding: ``identity``, ``gzip`` or ``br``.

        Returns:
            The bytes to send, with their validators.
        """
        identity = archived.forms[form]
        if coding == "identity":
            return identity
        made = archived.coded.get((form, coding))
        if made is None:
            made = await self._codings.made(identity, coding)
            made = archived.coded.setdefault((form, coding), made)
        return made

    async def _from_kept(self, timestamp: int, kept: Kept) -> ArchivedSnapshot | None:
        """A crawl whose file is gone, from where it is kept; then cached as any other."""
        cached = self._kept.get(timestamp)
        if cached is not None:
            self._kept.move_to_end(timestamp)
            return cached
        loading = self._loading.get(timestamp)
        if loading is None:
            loading = asyncio.ensure_future(self._load(timestamp, None, kept))
            self._loading[timestamp] = loading
            loading.add_done_callback(partial(self._loaded, timestamp))
        try:
            return await asyncio.wait_for(asyncio.shield(loading), self.wait)
        except TimeoutError:
            raise ArchiveBusy(self.wait) from None
        except (LoadError, OSError, ValueError, KeyError) as exc:  # a damaged archive file
            if isinstance(exc, LoadError) and exc.of_the_loader:  # tried again next time
                return None
            if (timestamp, None) not in self._reported:
                self._reported.add((timestamp, None))
                log.warning("crawl %s cannot be read from the archive: %s", timestamp, exc)
            return None

    def _loaded(self, timestamp: int, loading: asyncio.Future[ArchivedSnapshot | None]) -> None:
        """A load ended. Its failure is taken here too: a request that stopped waiting
        (ArchiveBusy) left it to no one, and the next request loads the crawl again."""
        self._loading.pop(timestamp, None)
        if not loading.cancelled():
            loading.exception()

    async def _load(
        self, timestamp: int, name: str | None, kept: Kept | None = None
    ) -> ArchivedSnapshot | None:
        async with self._one_at_a_time:
            if name is not None:
                archived: ArchivedSnapshot | None = await self.load(self.data_dir / name, timestamp)
            else:
                archived = None if kept is None else await kept.load(timestamp)
        if archived is None:
            return None
        self._kept[timestamp] = archived
        self._kept.move_to_end(timestamp)
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)
        return archived
