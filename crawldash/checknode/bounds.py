"""The live check's bounds, so that a public endpoint cannot be made a port scanner or a
flood: one connection per address and port a minute (a repeat is answered from that
check), checks per client a minute, checks in flight at once (in all, per client, per
host), new connections per host a minute; and which client a request is from
(``X-Forwarded-For`` only from a trusted proxy; an IPv6 client counted by its prefix)."""

from __future__ import annotations

import asyncio
import ipaddress
import math
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ..settings.addresses import IPNetwork
from .handshake import Outcome

WINDOW = 60.0  # seconds of each bound: a minute
MAX_CLIENTS = 100_000  # clients (or hosts) remembered at most (the oldest forgotten first)
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

    def find(self, key: tuple[str, int]) -> asyncio.Task[Checked] | None:
        """The check of ``key`` under way or made within the window, if any.

        Args:
            key: the target's canonical host and port.
        """
        now = time.monotonic()
        self._forget(now)
        kept = self._checks.get(key)
        if kept is None:
            return None
        started, task = kept
        if task.done() and now - started >= self.window:  # behind one still under way
            del self._checks[key]
            return None
        return task

    def start(
        self, key: tuple[str, int], run: Callable[[], Awaitable[Outcome]]
    ) -> asyncio.Task[Checked]:
        """Start the check of ``key`` (none is kept: ``find`` said so just before).

        Args:
            key: the target's canonical host and port.
            run: makes the check; what it raises is raised to every request waiting for
                it, and nothing is kept.
        """
        task = asyncio.create_task(_timed(run), name=f"checknode {key[0]}:{key[1]}")
        self._checks[key] = (time.monotonic(), task)
        task.add_done_callback(lambda done: self._drop_failed(key, done))
        return task

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
    """At most ``per_minute`` counted in any minute per key: a client's checks, or the new
    connections to one host."""

    def __init__(self, per_minute: int, window: float = WINDOW) -> None:
        self.per_minute, self.window = per_minute, window
        self._asked: OrderedDict[str, deque[float]] = OrderedDict()

    def wait(self, key: str) -> int | None:
        """Seconds until ``key`` may be counted again (for Retry-After), None if now;
        counts nothing."""
        times = self._asked.get(key)
        if times is None:
            return None
        now = time.monotonic()
        while times and now - times[0] >= self.window:
            times.popleft()
        if len(times) < self.per_minute:
            return None
        return max(1, math.ceil(times[0] + self.window - now))

    def admit(self, key: str) -> int | None:
        """Count one for ``key``, if within its limit.

        Args:
            key: the client's (or host's) key.

        Returns:
            None if counted, else the seconds until it would be (for Retry-After).
        """
        retry_after = self.wait(key)
        if retry_after is not None:
            return retry_after
        times = self._asked.pop(key, None) or deque()
        self._asked[key] = times  # most recently counted last
        if len(self._asked) > MAX_CLIENTS:
            self._asked.popitem(last=False)
        times.append(time.monotonic())
        return None


class InFlight:
    """At most ``limit`` checks under way at once, ``per_client`` of them for one client
    and ``per_host`` of one host: a client cannot hold every slot, nor can one machine's
    ports that answer nothing."""

    def __init__(self, limit: int, per_client: int | None = None, per_host: int = 1) -> None:
        self.limit, self.running = limit, 0
        self.per_client = limit if per_client is None else per_client
        self.per_host = per_host
        self._clients: Counter[str] = Counter()
        self._hosts: Counter[str] = Counter()

    @property
    def full(self) -> bool:
        return self.running >= self.limit

    def no_room(self, client: str, host: str) -> str | None:
        """Why no check for ``client`` of ``host`` may start now (``busy``,
        ``client_busy``, ``host_busy``), or None if one may."""
        if self.running >= self.limit:
            return "busy"
        if self._clients[client] >= self.per_client:
            return "client_busy"
        if self._hosts[host] >= self.per_host:
            return "host_busy"
        return None

    def take(self, client: str, host: str) -> None:
        """Hold a slot (``no_room`` said there is one); ``give_back`` when the check ends."""
        self.running += 1
        self._clients[client] += 1
        self._hosts[host] += 1

    def give_back(self, client: str, host: str) -> None:
        self.running -= 1
        for counts, key in ((self._clients, client), (self._hosts, host)):
            counts[key] -= 1
            if counts[key] <= 0:
                del counts[key]  # only what is under way is remembered


class Resting:
    """Hosts that answered nothing (a check timed out), each remembered for the window:
    no new connection is made to them on any port until it has passed, so that a machine
    whose ports all stay silent holds a slot one timeout a minute at most."""

    def __init__(self, window: float = WINDOW) -> None:
        self.window = window
        self._since: OrderedDict[str, float] = OrderedDict()

    def rest(self, host: str) -> None:
        self._since.pop(host, None)
        self._since[host] = time.monotonic()
        if len(self._since) > MAX_CLIENTS:
            self._since.popitem(last=False)

    def wait(self, host: str) -> int | None:
        """Seconds until ``host`` may be connected to again, None if now."""
        since = self._since.get(host)
        if since is None:
            return None
        left = since + self.window - time.monotonic()
        if left <= 0:
            del self._since[host]
            return None
        return max(1, math.ceil(left))


def client_address(
    peer: str | None,
    forwarded_for: str | Sequence[str] | None,
    trusted: Sequence[IPNetwork],
    ipv6_prefix: int | None = None,
) -> str:
    """Which client a request is from: the connection's peer, unless that is a trusted
    proxy; then the nearest (rightmost) address in ``X-Forwarded-For`` that is not a
    trusted proxy (those further left could have been written by the client itself). A
    request may carry the header on several lines (HAProxy's ``option forwardfor`` adds
    one of its own): they are one list, in order.

    Args:
        peer: the connection's remote address.
        forwarded_for: the X-Forwarded-For header's lines (or its one line), if any.
        trusted: the trusted proxies' ranges.
        ipv6_prefix: if given, the client as ``client_key`` counts it.

    Returns:
        The client's address, as text.
    """
    client = peer or "unknown"
    lines = [forwarded_for] if isinstance(forwarded_for, str) else list(forwarded_for or ())
    hops = [hop for line in lines for hop in (part.strip() for part in line.split(",")) if hop]
    if hops and _within(client, trusted):
        for hop in reversed(hops):
            if not _within(hop, trusted):
                client = hop if _is_ip(hop) else client
                break
            client = hop
    return client if ipv6_prefix is None else client_key(client, ipv6_prefix)


def client_key(client: str, ipv6_prefix: int) -> str:
    """What a client is counted as: its IPv4 address (also for an IPv4-mapped one), or
    its IPv6 address's ``/ipv6_prefix`` network: one subscriber usually holds a whole
    /64, and could ask from a new address of it for every check.

    Args:
        client: the client's address as ``client_address`` found it.
        ipv6_prefix: the prefix length an IPv6 client is counted by (1-128).

    Returns:
        The key, as text (``client`` unchanged if it is no address).
    """
    try:
        ip = ipaddress.ip_address(client)
    except ValueError:
        return client
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        bits = 128 - ipv6_prefix
        return str(ipaddress.IPv6Network((int(ip) >> bits << bits, ipv6_prefix)))
    return str(ip)


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
