"""A block's propagation statistics, from its ``binv:<hash>`` sorted set.

A block's announcements are read with ``DUMP``, whose scores are binary (``rdb_zset.py``),
a few keys a round trip on a connection of the pass's own. The next keys' ``DUMP``s are
sent before this round's are worked out, so that Redis serializes them meanwhile: each
process works while the other does, and no thread waits on another for the GIL. A set
``DUMP`` does not give as a skiplist (a small one, or a server that refuses ``DUMP``) is
read with ``ZRANGE ... WITHSCORES``, and so is a block of more than ``MAX_ANNOUNCEMENTS``
(no block ping.py writes, which announces each block once per node it holds): only its
earliest are read, and its statistics are theirs, so that one key never costs more than a
bounded read. Announcements whose time is not a finite number of ms from 0 to
``MAX_SCORE`` are left out, said once per block.

ping.py's nodes announce every block, so the same members come back key after key: a
member is checked (it must be an address, as the API spells them) once, then known, until
the known ones outgrow ``KNOWN_MEMBERS``.
"""

from __future__ import annotations

import logging
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Generator, Sequence
from time import monotonic
from typing import cast

import redis

from ..crawl.address import AddressError
from ..crawl.blocks import from_announcements
from ..crawl.propagation import Block, bitnodes_member
from .rdb_zset import NotASkiplist, read_zset_dump
from .redis_values import Skips

log = logging.getLogger(__name__)
Announcements = tuple[list[bytes], list[float]]  # members and scores, earliest first
Wanted = tuple[bytes, str, int]  # a binv: key, its hash in lower case, its ZCARD
KEYS_PER_ROUND = 8  # binv: keys a round trip: each a whole block's DUMP, held until read
KNOWN_MEMBERS = 100_000  # well-formed members remembered: several times ping.py's nodes
MAX_ANNOUNCEMENTS = 100_000  # read of one block at most: the earliest
MAX_SCORE = 2**53  # ms since the epoch: the last exact float, far past any block


class BlockStats:
    """Reads blocks' announcements from the bridge's Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.dump = True  # until the server refuses DUMP
        self.known: set[bytes] = set()  # members found well-formed

    def read(
        self, keys: Sequence[Wanted], skips: Skips, deadline: float
    ) -> Generator[tuple[bytes, Block | None], None, None]:
        """Each key's block as kept, until ``deadline`` (a ``time.monotonic()``): no round
        of keys is sent after it (the first always is), and keys not yielded were not read.
        A key that holds no well-formed announcement, or is no sorted set, gives None;
        malformed members are left out and said once. Closing the generator early closes
        its connection, and the round sent ahead with it.

        Args:
            keys: ``(binv:<hash> key, the hash in lower case, its ZCARD)``.
            skips: where what is left out is noted, to be said by the caller.
            deadline: when to stop reading.

        Returns:
            ``(key, block or None)`` for each key read, in order.
        """
        rounds = deque(keys[i : i + KEYS_PER_ROUND] for i in range(0, len(keys), KEYS_PER_ROUND))
        with _Dumps(self.client, self.dump) as dumps:
            sent = dumps.send(rounds.popleft()) if rounds else ()
            while sent:
                batch, payloads = sent, dumps.replies(sent)
                # The next round is sent before this one is worked out, not sooner: Redis
                # sends no reply while it serializes, so a round sent before this one's
                # replies were read would hold them back.
                sent = dumps.send(rounds.popleft()) if rounds and monotonic() <= deadline else ()
                for (key, block_hash, _), payload in zip(batch, payloads, strict=True):
                    yield key, self._block(key, block_hash, payload, skips)

    def _block(self, key: bytes, block_hash: str, payload: object, skips: Skips) -> Block | None:
        announcements = self._announcements(key, payload, skips)
        if announcements is None:
            return None
        members, scores = _in_bounds(block_hash, *announcements, skips)
        members, scores = self._well_formed(block_hash, members, scores, skips)
        return from_announcements(block_hash, members, scores) if members else None

    def _announcements(self, key: bytes, payload: object, skips: Skips) -> Announcements | None:
        if isinstance(payload, redis.ResponseError) and self.dump:
            self.dump = False
            log.warning("Redis refuses DUMP (%s): blocks are read with ZRANGE, slower", payload)
        if isinstance(payload, bytes):
            try:
                members, scores = read_zset_dump(payload)
            except NotASkiplist:
                pass  # a small set, or not a sorted set: ZRANGE says which
            else:  # the set may have grown since its ZCARD
                return members[:MAX_ANNOUNCEMENTS], scores[:MAX_ANNOUNCEMENTS]
        try:
            pairs = cast(
                list[tuple[bytes, float]],
                self.client.zrange(key, 0, MAX_ANNOUNCEMENTS - 1, withscores=True),
            )
        except redis.ResponseError:  # the key changed type since ZCARD
            skips.skip("skipped binv: keys, no sorted set of a block hash", key)
            return None
        return [member for member, _ in pairs], [score for _, score in pairs]

    def _well_formed(
        self, block_hash: str, members: list[bytes], scores: list[float], skips: Skips
    ) -> Announcements:
        """The members that are addresses (ADDRESS-PORT, as ping.py writes them), with their
        scores; the rest said once per block."""
        if self.known.issuperset(members):
            return members, scores
        unknown = set(members).difference(self.known)
        bad = {member for member in unknown if not _is_address(member)}
        if len(self.known) + len(unknown) > KNOWN_MEMBERS:
            self.known.clear()
        self.known.update(unknown.difference(bad))
        if not bad:
            return members, scores
        # A sorted set's members are distinct: each bad one is there once.
        example = f"block {block_hash}: {len(bad)}, the least {min(bad)[:64]!r}"
        skips.skip("malformed members skipped in blocks", block_hash, example)
        kept = [(m, s) for m, s in zip(members, scores, strict=True) if m not in bad]
        return [m for m, _ in kept], [s for _, s in kept]


class _Dumps:
    """``DUMP``s sent ahead on a connection of their own, their replies read in order: a
    reply Redis refused is its ResponseError, and a ``_Dumps`` made with ``use`` False
    (a server that refuses ``DUMP``) gives None for every key, to be read with ZRANGE."""

    def __init__(self, client: redis.Redis, use: bool) -> None:
        pool = client.connection_pool
        self.connection = pool.connection_class(**pool.connection_kwargs) if use else None

    def __enter__(self) -> _Dumps:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.connection is not None:
            self.connection.disconnect()  # replies never read go with it

    def send(self, batch: Sequence[Wanted]) -> Sequence[Wanted]:
        """DUMP each key of ``batch`` of at most MAX_ANNOUNCEMENTS: a larger one is read
        in part, with ZRANGE."""
        commands = [("DUMP", key) for key, _, count in batch if count <= MAX_ANNOUNCEMENTS]
        if self.connection is not None and commands:
            self.connection.send_packed_command(self.connection.pack_commands(commands))
        return batch

    def replies(self, batch: Sequence[Wanted]) -> list[object]:
        found: list[object] = []
        for _, _, count in batch:
            if self.connection is None or count > MAX_ANNOUNCEMENTS:
                found.append(None)
                continue
            try:
                found.append(self.connection.read_response(disable_decoding=True))
            except redis.ResponseError as exc:
                found.append(exc)
        return found


def _in_bounds(
    block_hash: str, members: list[bytes], scores: list[float], skips: Skips
) -> Announcements:
    """The announcements whose time is from 0 to MAX_SCORE (``scores`` ascend, so those
    out of bounds are at either end); the rest said once per block."""
    low, high = bisect_left(scores, 0), bisect_right(scores, MAX_SCORE)
    if (low, high) == (0, len(scores)):
        return members, scores
    example = (
        f"block {block_hash}: {len(scores) - high + low}, e.g. {scores[-1 if low == 0 else 0]}"
    )
    skips.skip("announcements skipped: their time is out of bounds", block_hash, example)
    return members[low:high], scores[low:high]


def _is_address(member: bytes) -> bool:
    try:
        bitnodes_member(member.decode())
    except (AddressError, UnicodeDecodeError):
        return False
    return True
