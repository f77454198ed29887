"""Which crawl each endpoint answers about, asked of all of them at once: from the moment
a crawl is written, each endpoint is asked again and again (one connection each, a pause
between two asks), until it names the crawl; when it first did is that endpoint's switch.
As soon as one endpoint names it, every other is asked at once, its pause cut short, as a
client that polls several endpoints asks the rest once one shows a new crawl: the spread
of the first answers about it is then the server's, not the phases of the pauses.

Bodies with a validator are asked for with ``If-None-Match``: until the crawl changes the
answer is a 304 without a body, so that the asking costs the server little and the run
stays near quiet. A large body is read only as far as the field that names its crawl.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
import msgspec

# Seconds between two asks of one endpoint. Every endpoint is asked at once, from the
# cores the loads measured run on: asked much more often, the asking is a load of its own
# and lengthens what it measures.
PAUSE = 0.02
HEAD_BYTES = 256  # of a large body, read for the field that names its crawl
_TIMESTAMP = re.compile(rb'"timestamp":\s*(\d+)')
About = Callable[[bytes], int | None]  # the crawl an answer names, from its body


def timestamp_first(head: bytes) -> int | None:
    """A body that opens with ``"timestamp"`` (the snapshot, a breakdown, the map)."""
    found = _TIMESTAMP.search(head)
    return int(found.group(1)) if found else None


def field(*path: str | int) -> About:
    """The crawl named at ``path`` in a small JSON body (the last item for -1)."""

    def about(body: bytes) -> int | None:
        value: object = msgspec.json.decode(body)
        for key in path:
            if isinstance(value, list) and isinstance(key, int):
                value = value[key] if value else None
            elif isinstance(value, dict) and isinstance(key, str):
                value = value.get(key)
            else:
                return None
        return value if isinstance(value, int) else None

    return about


def file_name(disposition: str) -> int | None:
    """The crawl a CSV's file name gives (``crawldash-nodes-<timestamp>.csv``)."""
    found = re.search(r"-(\d+)\.csv", disposition)
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class Endpoint:
    """One request, and how to read the crawl its answer is about."""

    name: str
    path: str
    about: About
    large: bool = False  # read only HEAD_BYTES of it
    csv: bool = False  # the crawl is in its file name
    follows: bool = False  # made after the switch (a CSV's records): not in the gap


def crawldash_endpoints(node: str) -> list[Endpoint]:
    """Every endpoint of crawldash that answers about the latest crawl; ``node`` is an
    address every crawl written holds (``host:port``)."""
    host, _, port = node.rpartition(":")
    v1_node = f"{host.strip('[]')}-{port}"
    return [
        Endpoint("status", "/api/status", field("snapshot_timestamp")),
        Endpoint("snapshot", "/api/snapshot", timestamp_first, large=True),
        Endpoint("history", "/api/history?limit=1", field(-1, "timestamp")),
        Endpoint("check", f"/api/check?address={node}", field("snapshot_timestamp")),
        Endpoint("presence", f"/api/presence?address={node}&limit=1", field(-1, "to")),
        Endpoint("unique", "/api/unique?window=86400", field("to")),
        Endpoint("breakdown", "/api/breakdown?by=country", timestamp_first),
        Endpoint("nodes", "/api/nodes?country=DE&limit=10", timestamp_first),
        Endpoint("nodes csv", "/api/nodes?country=DE&format=csv", field(), csv=True, follows=True),
        Endpoint("map", "/api/map", timestamp_first, large=True),
        Endpoint("v1 snapshots", "/api/v1/snapshots/?limit=1", field("results", 0, "timestamp")),
        Endpoint("v1 latest", "/api/v1/snapshots/latest/", timestamp_first, large=True),
        Endpoint("v1 nodes", "/api/v1/nodes/?limit=1", timestamp_first),
        Endpoint("v1 node", f"/api/v1/nodes/{v1_node}/", field("presence", "last_seen")),
    ]


def peer_endpoints() -> list[Endpoint]:
    """alt-bitnodes' routes that name the latest crawl."""
    return [
        Endpoint("v1 snapshots", "/api/v1/snapshots/?limit=1", field("results", 0, "timestamp")),
        Endpoint("v1 latest", "/api/v1/snapshots/latest/", timestamp_first, large=True),
    ]


@dataclass(frozen=True)
class Switches:
    """Seconds from a write until each endpoint first named the crawl written (None: not
    within the limit); ``switching``: the endpoints that switch together; ``before``: when
    the last ask of each that was answered about an older crawl was sent (0.0: none was)."""

    seconds: dict[str, float | None]
    switching: tuple[str, ...]
    before: dict[str, float]

    def _first_answers(self) -> list[float] | None:
        """When each endpoint that switches together first named the crawl; None if one
        never did."""
        found = [self.seconds[name] for name in self.switching]
        named = [s for s in found if s is not None]
        return named if len(named) == len(found) else None

    @property
    def gap(self) -> float | None:
        """The most time between two endpoints' switches; None if one never switched."""
        named = self._first_answers()
        return None if named is None else max(named) - min(named)

    @property
    def proven_gap(self) -> float | None:
        """The least time between two endpoints' switches that the answers prove: one was
        still asked about an older crawl (and so had not switched when that ask was sent)
        that long after another had named the new one. None if one never switched."""
        named = self._first_answers()
        if named is None:
            return None
        return max(0.0, max(self.before[name] for name in self.switching) - min(named))


async def _named(
    session: aiohttp.ClientSession,
    base: str,
    endpoint: Endpoint,
    timestamp: int,
    until: float,
    seen: asyncio.Event,
) -> tuple[float | None, float]:
    """When ``endpoint`` first named ``timestamp`` (time.monotonic()), asked until then,
    and when the last ask answered about an older crawl was sent (0.0: none was). ``seen``
    is set once any endpoint named it: a pause then ends at once."""
    etag: str | None = None
    headers = {"Accept-Encoding": "gzip"}
    older = 0.0
    while time.monotonic() < until:
        asked = dict(headers, **({"If-None-Match": etag} if etag else {}))
        sighted = seen.is_set()
        sent = time.monotonic()
        async with session.get(base + endpoint.path, headers=asked) as response:
            if response.status == 304:
                named = None
            elif endpoint.csv:
                named = file_name(response.headers.get("Content-Disposition", ""))
                response.close()
            elif endpoint.large:
                named = endpoint.about(await response.content.read(HEAD_BYTES))
                response.close()  # the rest is not read: this connection goes
            else:
                named = endpoint.about(await response.read())
            received = time.monotonic()
            if response.status == 200:
                etag = response.headers.get("ETag")
        if named is not None and named >= timestamp:
            seen.set()
            return received, older
        if response.status == 304 or named is not None:  # a 304 is about the crawl its
            older = sent  # ETag was: an older one
        if sighted:  # this ask was after the sighting: the pause as before
            await asyncio.sleep(PAUSE)
        elif not seen.is_set():  # else it came during this ask: asked again at once
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(seen.wait(), PAUSE)
    return None, older


async def _switches(
    base: str, endpoints: list[Endpoint], timestamp: int, written: float, within: float
) -> Switches:
    until = written + within
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    seen = asyncio.Event()
    async with aiohttp.ClientSession(connector=connector, auto_decompress=True) as session:
        found = await asyncio.gather(
            *(_named(session, base, e, timestamp, until, seen) for e in endpoints)
        )
    return Switches(
        {
            e.name: None if t is None else t - written
            for e, (t, _) in zip(endpoints, found, strict=True)
        },
        tuple(e.name for e in endpoints if not e.follows),
        {e.name: max(0.0, t - written) for e, (_, t) in zip(endpoints, found, strict=True)},
    )


def switches(
    base: str,
    endpoints: list[Endpoint],
    timestamp: int,
    write: Callable[[], None],
    within: float,
) -> Switches:
    """Write a crawl (``write``), then ask every endpoint until each names ``timestamp``."""

    async def run() -> Switches:
        # The session is opened and every connection made before the write.
        write()
        return await _switches(base, endpoints, timestamp, time.monotonic(), within)

    return asyncio.run(run())


def median_and_worst(values: list[float | None], limit: float) -> tuple[float, float]:
    seconds = [limit if value is None else value for value in values]
    return float(statistics.median(seconds)), max(seconds)
