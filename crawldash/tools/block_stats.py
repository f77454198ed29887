"""A block's propagation statistics, from its ``binv:<hash>`` sorted set.

A block's announcements are read with ``DUMP``, whose scores are binary (``rdb_zset.py``),
a few keys a round trip, the next few fetched while these are worked out, so that Redis
and the bridge work at once. A set ``DUMP`` does not give as a skiplist (a small one, or
a server that refuses ``DUMP``) is read with ``ZRANGE ... WITHSCORES``.
"""

from __future__ import annotations

import functools
import logging
import math
import operator
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from time import monotonic
from typing import cast

import redis

from ..crawl.address import AddressError
from ..crawl.propagation import HEAD_SIZE, Block, bitnodes_member
from .rdb_zset import NotASkiplist, read_zset_dump

log = logging.getLogger(__name__)
Say = Callable[..., None]  # (what, message, *args): logged once per ``what``
Announcements = tuple[list[bytes], list[float]]  # members and scores, earliest first
KEYS_PER_FETCH = 8  # binv: keys a round trip: each a whole block's DUMP, held until read

# ping.py's member: ADDRESS-PORT, IPv6 unbracketed, an onion or I2P name as it is.
MEMBER = re.compile(rb"[0-9A-Za-z.:]+-[0-9]+")
MEMBERS = re.compile(rb"(?:[0-9A-Za-z.:]+-[0-9]+\n)*[0-9A-Za-z.:]+-[0-9]+")


class BlockStats:
    """Reads blocks' announcements from the bridge's Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.dump = True  # until the server refuses DUMP

    def read(
        self, keys: Sequence[tuple[bytes, str]], say: Say, deadline: float
    ) -> Iterator[tuple[bytes, Block | None]]:
        """Each key's block as kept, until ``deadline`` (a ``time.monotonic()``); keys not
        yielded by then were not read. A key that holds no well-formed announcement, or is
        no sorted set, gives None; malformed members are left out and said once.

        Args:
            keys: ``(binv:<hash> key, the hash in lower case)`` pairs.
            say: the caller's log-once: ``say(what, message, *args)``.
            deadline: when to stop reading.

        Returns:
            ``(key, block or None)`` for each key read, in order.
        """
        batches = [keys[i : i + KEYS_PER_FETCH] for i in range(0, len(keys), KEYS_PER_FETCH)]
        if not batches:
            return
        with ThreadPoolExecutor(1, thread_name_prefix="crawldash-binv") as fetcher:
            fetching: Future[list[object]] = fetcher.submit(self._fetch, batches[0])
            for number, batch in enumerate(batches):
                dumped = fetching.result()
                last = number + 1 == len(batches) or monotonic() > deadline
                if not last:
                    fetching = fetcher.submit(self._fetch, batches[number + 1])
                for (key, block_hash), payload in zip(batch, dumped, strict=True):
                    announcements = self._announcements(key, payload, say)
                    if announcements is None:
                        yield key, None
                    else:
                        members, scores = announcements
                        said = functools.partial(say, f"member:{key!r}")
                        yield key, block_of(block_hash, members, scores, said)
                if last:
                    return

    def _fetch(self, batch: Sequence[tuple[bytes, str]]) -> list[object]:
        """Each key's DUMP (or None: to be read with ZRANGE), in one round trip."""
        if not self.dump:
            return [None] * len(batch)
        pipe = self.client.pipeline(transaction=False)
        for key, _ in batch:
            pipe.dump(key)
        return list(pipe.execute(raise_on_error=False))

    def _announcements(self, key: bytes, payload: object, say: Say) -> Announcements | None:
        if isinstance(payload, redis.ResponseError) and self.dump:
            self.dump = False
            log.warning("Redis refuses DUMP (%s): blocks are read with ZRANGE, slower", payload)
        if isinstance(payload, bytes):
            try:
                return read_zset_dump(payload)
            except NotASkiplist:
                pass  # a small set, or not a sorted set: ZRANGE says which
        try:
            pairs = cast(list[tuple[bytes, float]], self.client.zrange(key, 0, -1, withscores=True))
        except redis.ResponseError as exc:  # the key changed type since ZCARD
            say(f"key:{key!r}", "skipped %r: %s", key, exc)
            return None
        return [member for member, _ in pairs], [score for _, score in pairs]


def block_of(
    block_hash: str, members: list[bytes], scores: list[float], say: Callable[..., None]
) -> Block | None:
    """The statistics of one block's announcements (earliest first): delays in ms after
    the earliest, their mean and population standard deviation, percentiles by linear
    interpolation between the two nearest ranks, and the first ``HEAD_SIZE``.

    Args:
        block_hash: the block's hash, lower case.
        members: the announcing nodes as ping.py writes them, earliest first.
        scores: their ms since the epoch, ascending.
        say: logs a message once (``say(message, *args)``) for the key's bad members.

    Returns:
        The block as kept; None if no member is well-formed.
    """
    members, scores = _well_formed(block_hash, members, scores, say)
    if not members:
        return None
    first = scores[0]
    # Delays, not times: numbers this small keep E[d^2] - mean^2 exact to far below a ms.
    delays = [score - first for score in scores]
    count = len(delays)
    mean = math.fsum(delays) / count
    std = math.sqrt(max(0.0, math.fsum(map(operator.mul, delays, delays)) / count - mean * mean))
    head = []
    for member, score in zip(members, scores, strict=False):
        try:
            head.append((bitnodes_member(member.decode()), round(score)))
        except (AddressError, UnicodeDecodeError):
            say("block %s: malformed member %r skipped", block_hash, member)
        if len(head) == HEAD_SIZE:
            break
    return Block(
        block_hash,
        round(first),
        count,
        delays[-1],
        mean,
        std,
        _at(delays, 0.5),
        _at(delays, 0.9),
        head,
    )


def _well_formed(
    block_hash: str, members: list[bytes], scores: list[float], say: Callable[..., None]
) -> Announcements:
    """The members that are ADDRESS-PORT, with their scores; the rest said once."""
    joined = b"\n".join(members)
    if joined.count(b"\n") == len(members) - 1 and MEMBERS.fullmatch(joined):
        return members, scores  # all of them: one match instead of one per member
    kept: Announcements = ([], [])
    bad: list[bytes] = []
    for member, score in zip(members, scores, strict=True):
        if MEMBER.fullmatch(member):
            kept[0].append(member)
            kept[1].append(score)
        else:
            bad.append(member)
    if bad:
        say("block %s: %d malformed members skipped, e.g. %r", block_hash, len(bad), bad[0])
    return kept


def _at(ascending: list[float], share: float) -> float:
    """The ``share`` percentile, linearly interpolated between the two nearest ranks."""
    position = share * (len(ascending) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ascending) - 1)
    return ascending[low] + (ascending[high] - ascending[low]) * (position - low)
