"""A network's live check as a whole: the target refused or allowed, the bounds applied
(room for a new check first, so that a request refused as busy costs the client none of
its checks a minute), the handshake made (once per address and port a minute), the
success handed to the bridge, and every outcome and refusal counted for /metrics."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

from ..settings.addresses import IPNetwork
from ..settings.networks import NetworkFolder
from ..settings.serve import Settings
from .bounds import ClientLimit, InFlight, Repeats, Resting, client_key
from .handoff import HandedCheck, Handoff
from .handshake import Limits, Outcome, handshake
from .reply import CheckNodeBody, Reason, answer_of, not_checkable
from .special import NOT_PUBLIC, OUTSIDE_UNICAST
from .targets import NotCheckable, Refusal, Target, target_of

BUSY_RETRY_AFTER = 5  # seconds a client is told to wait while every slot is taken
# Every outcome a check can have, and every cause a request is refused for, so that
# /metrics shows each from the start at 0: Prometheus reads a counter that first appears
# at 1 as no increase, and an alert on the first refusal of a cause would never fire.
OUTCOMES = ("success", *get_args(Reason))
CLIENT_CAUSES = ("rate_limited", "client_busy")  # TooMany's: the client's own bounds
SERVER_CAUSES = ("busy", "host_busy", "host_rate", "host_resting")  # the server's, the node's
TARGET_CAUSES = (
    "host_name",
    "invalid",
    "not_allowed",
    *sorted({block.cause for block in (*NOT_PUBLIC, OUTSIDE_UNICAST)}),
)
REFUSAL_CAUSES = (*CLIENT_CAUSES, *SERVER_CAUSES, *TARGET_CAUSES)


class TooMany(Exception):
    """A check not made now: ``cause`` (rate_limited, client_busy: the client's bounds,
    a 429; busy, host_busy, host_rate, host_resting: the server's or the node's, a 503),
    when to try again, and why, for a person."""

    def __init__(self, cause: str, retry_after: int, message: str) -> None:
        super().__init__(message)
        self.cause, self.retry_after, self.message = cause, retry_after, message

    @property
    def clients_own(self) -> bool:
        """Whether the client's own bounds refused it (else the server's or the node's)."""
        return self.cause in CLIENT_CAUSES


@dataclass(frozen=True)
class CheckOptions:
    """How a network's checks are made and bounded (from serve's ``--live-check-*``)."""

    magic: bytes
    limits: Limits = field(default_factory=Limits)
    allowed: Sequence[IPNetwork] = ()
    proxy: tuple[str, int] | None = None
    per_client: int = 10
    in_flight: int = 32
    handoff_dir: Path | None = None
    client_in_flight: int = 2
    host_in_flight: int = 1
    per_host: int = 10
    client_ipv6_prefix: int = 64
    only: Sequence[IPNetwork] = ()  # if any, the only ranges checked (--live-check-only)


class LiveCheck:
    """One network's checks, and their counts by outcome and refusals by cause."""

    def __init__(self, options: CheckOptions) -> None:
        self.options = options
        self.repeats = Repeats()
        self.clients = ClientLimit(options.per_client)
        self.hosts = ClientLimit(options.per_host)
        self.resting = Resting()
        self.in_flight = InFlight(
            options.in_flight, options.client_in_flight, options.host_in_flight
        )
        self.handoff = Handoff(options.handoff_dir) if options.handoff_dir else None
        self.outcomes: Counter[tuple[str, bool]] = Counter()  # (outcome, cached) -> answers
        self.refusals: Counter[str] = Counter()  # cause -> requests refused

    async def check(self, address: str, port: int, client: str) -> CheckNodeBody:
        """Check the node at ``address``:``port`` for ``client``. A request refused
        (a target never checked, or no room for a new check) costs the client nothing of
        its checks a minute.

        Args:
            address: the host as the client gave it.
            port: the port as a whole number.
            client: the client's address, for its bounds.

        Returns:
            The answer. Raises TooMany past a bound, Refusal for a target never checked.
        """
        try:
            options = self.options
            target = target_of(
                address, port, options.allowed, options.proxy is not None, options.only
            )
        except Refusal as refusal:
            self.refusals[refusal.cause] += 1
            raise
        except NotCheckable as unreachable:
            self.outcomes["not_checkable", False] += 1
            return not_checkable(unreachable.host, port, time.time())
        who, host = client_key(client, self.options.client_ipv6_prefix), target.host_group
        key = (target.host, target.port)
        # No await from here to the check's start: what is looked at stays true.
        task = self.repeats.find(key)
        try:
            if task is None:
                self._room_for(who, host)
            retry_after = self.clients.admit(who)
            if retry_after is not None:
                raise TooMany(
                    "rate_limited",
                    retry_after,
                    f"at most {self.options.per_client} checks a minute per client; "
                    f"retry in {retry_after} s",
                )
        except TooMany as too_many:
            self.refusals[too_many.cause] += 1
            raise
        cached = task is not None
        if task is None:
            self.hosts.admit(host)
            self.in_flight.take(who, host)
            task = self.repeats.start(key, lambda: self._run(target))
            task.add_done_callback(lambda _: self.in_flight.give_back(who, host))
        checked = await asyncio.shield(task)
        self.outcomes[checked.outcome.reason or "success", cached] += 1
        return answer_of(target, checked, cached)

    def _room_for(self, client: str, host: str) -> None:
        """TooMany unless a new check for ``client`` of ``host`` may start now."""
        busy = self.in_flight.no_room(client, host)
        if busy == "busy":
            raise TooMany("busy", BUSY_RETRY_AFTER, "too many checks under way; retry soon")
        if busy == "client_busy":
            raise TooMany(
                busy,
                BUSY_RETRY_AFTER,
                f"at most {self.options.client_in_flight} checks under way per client; "
                "retry once one has ended",
            )
        if busy == "host_busy":
            raise TooMany(
                busy, BUSY_RETRY_AFTER, "a check of this node's host is under way; retry soon"
            )
        resting = self.resting.wait(host)
        if resting is not None:
            raise TooMany(
                "host_resting",
                resting,
                f"this node's host answered nothing to a check within the minute; "
                f"retry in {resting} s",
            )
        retry_after = self.hosts.wait(host)
        if retry_after is not None:
            raise TooMany(
                "host_rate",
                retry_after,
                f"this node's host was checked {self.options.per_host} times in the last "
                f"minute; retry in {retry_after} s",
            )

    async def _run(self, target: Target) -> Outcome:
        options = self.options
        outcome = await handshake(target, options.magic, options.limits, options.proxy)
        if outcome.reason == "timeout":
            self.resting.rest(target.host_group)
        if outcome.version is not None and self.handoff is not None:
            handed = HandedCheck(
                target.host, target.port, outcome.version.services, int(time.time())
            )
            await asyncio.to_thread(self.handoff.leave, handed)
        return outcome


def live_check_for(settings: Settings, folder: NetworkFolder) -> LiveCheck | None:
    """``folder``'s network's live check, as serve's options make it; None while off.

    Args:
        settings: serve's settings (the ``--live-check-*`` bounds, ``--tor-proxy``).
        folder: the network, with its magic and hand-off folder.

    Returns:
        The live check, or None if ``--live-check`` does not name the network.
    """
    if not folder.live_check or folder.magic is None:
        return None
    limits = Limits(
        settings.live_check_connect_timeout,
        settings.live_check_timeout,
        settings.live_check_max_bytes,
    )
    options = CheckOptions(
        folder.magic,
        limits,
        settings.live_check_allow,
        settings.tor_proxy,
        settings.live_check_per_client,
        settings.live_check_in_flight,
        folder.handoff_dir,
        settings.live_check_client_in_flight,
        settings.live_check_host_in_flight,
        settings.live_check_per_host,
        settings.client_ipv6_prefix,
        settings.live_check_only,
    )
    return LiveCheck(options)
