"""The live check's bounds, so that a public endpoint cannot be made a port scanner or a
flood: one connection per address and port a minute (a repeat is answered from that
check), checks per client a minute, checks in flight at once; and which client a request
is from (``X-Forwarded-For`` only from a trusted proxy)."""

from __future__ import annotations

import asyncio
import ipaddress
import math
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ..settings.addresses import IPNetwork
from .handshake import Outcome

WINDOW = 60.0  # seconds of each bound: a minute
MAX_CLIENTS = 100_000  # clients remembered at most (the oldest forgotten first)
MAX_TARGETS = 100_000  # checked targets remembered at most


@dataclass(frozen=True)
class Checked:
    """A check's outcome and when it was made (unix seconds)."""

    outcome: Outcome
    checked_at: float


class Repeats:
    """One check per address and port a minute: a check asked for again within the minute
    (or while it is under way) shares the first one's answer; the node sees one connection.
    Each check runs as a task of its own, so that a client that goes away ends neither it
    nor the answer of those waiting for it."""

    def __init__(self, window: float = WINDOW) -> None:
        self.window = window
        self._checks: OrderedDict[tuple[str, int], tuple[float, asyncio.Task[Checked]]] = (
            OrderedDict()
        )

    async def check(
        self, key: tuple[str, int], run: Callable[[], Awaitable[Outcome]]
    ) -> tuple[Checked, bool]:
        """The check of ``key``: ``run``'s, or the one made within the window.

        Args:
            key: the target's canonical host and port.
            run: makes the check (called only if none is kept); what it raises is raised
                to every request waiting for it, and nothing is kept.

        Returns:
            The check, and whether it was kept from an earlier request.
        """
        now = time.monotonic()
        self._forget(now)
        kept = self._checks.get(key)
        if kept is not None:
            return await asyncio.shield(kept[1]), True
        task = asyncio.create_task(_timed(run), name=f"checknode {key[0]}:{key[1]}")
        self._checks[key] = (now, task)
        task.add_done_callback(lambda done: self._drop_failed(key, done))
        return await asyncio.shield(task), False

    def kept(self, key: tuple[str, int]) -> bool:
        """Whether a check of ``key`` is under way or was made within the window."""
        found = self._checks.get(key)
        return found is not None and time.monotonic() - found[0] < self.window

    def _drop_failed(self, key: tuple[str, int], task: asyncio.Task[Checked]) -> None:
        if task.cancelled() or task.exception() is not None:
            kept = self._checks.get(key)
            if kept is not None and kept[1] is task:
                del self._checks[key]

    def _forget(self, now: float) -> None:
        while self._checks:
            key, (started, task) = next(iter(self._checks.items()))
            old = now - started >= self.window and task.done()
            if not old and len(self._checks) < MAX_TARGETS:
                break
            del self._checks[key]


async def _timed(run: Callable[[], Awaitable[Outcome]]) -> Checked:
    outcome = await run()
    return Checked(outcome, time.time())


class ClientLimit:
    """At most ``per_minute`` checks per client in any minute."""

    def __init__(self, per_minute: int, window: float = WINDOW) -> None:
        self.per_minute, self.window = per_minute, window
        self._asked: OrderedDict[str, deque[float]] = OrderedDict()

    def admit(self, client: str) -> int | None:
        """Count a check asked for by ``client``.

        Args:
            client: the client's address.

        Returns:
            None if admitted, else the seconds until it would be (for Retry-After).
        """
        now = time.monotonic()
        times = self._asked.pop(client, None) or deque()
        while times and now - times[0] >= self.window:
            times.popleft()
        self._asked[client] = times  # most recently asked last
        if len(self._asked) > MAX_CLIENTS:
            self._asked.popitem(last=False)
        if len(times) >= self.per_minute:
            return max(1, math.ceil(times[0] + self.window - now))
        times.append(now)
        return None


class InFlight:
    """At most ``limit`` checks under way at once."""

    def __init__(self, limit: int) -> None:
        self.limit, self.running = limit, 0

    @property
    def full(self) -> bool:
        return self.running >= self.limit

    def take(self) -> bool:
        """Whether a check may start now (if so, ``give_back`` when it ends)."""
        if self.running >= self.limit:
            return False
        self.running += 1
        return True

    def give_back(self) -> None:
        self.running -= 1


def client_address(
    peer: str | None, forwarded_for: str | None, trusted: Sequence[IPNetwork]
) -> str:
    """Which client a request is from: the connection's peer, unless that is a trusted
    proxy; then the nearest address in ``X-Forwarded-For`` that is not a trusted proxy
    (those further left could have been written by the client itself).

    Args:
        peer: the connection's remote address.
        forwarded_for: the X-Forwarded-For header, if any.
        trusted: the trusted proxies' ranges.

    Returns:
        The client's address, as text.
    """
    client = peer or "unknown"
    if not forwarded_for or not _within(client, trusted):
        return client
    for hop in reversed([part.strip() for part in forwarded_for.split(",")]):
        if not _within(hop, trusted):
            return hop if _is_ip(hop) else client
        client = hop
    return client


def _within(text: str, ranges: Sequence[IPNetwork]) -> bool:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return any(address in each for each in ranges)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
