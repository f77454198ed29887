"""Answers built from the history: made in steps (generators that yield between two, so
that a caller on the event loop lets other requests in there), and kept until the history
changes within a budget of bytes, the least recently asked for given up first.

A count of answers bounds nothing: one answer over a long history, by many values, is a
thousand times another. A budget of bytes bounds the memory a client asking for distinct
answers, one after another, can make the server hold: each answer's bytes, and what it is
kept by, the text of which the client chose (a query string it may pad, a header), with
what an entry holds beside (``ENTRY_BYTES``): an answer of no bytes is not free to keep.
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from collections.abc import Callable, Generator, Hashable
from typing import Generic, TypeVar

import brotli

from ..bodies import BROTLI_QUALITY, GZIP_LEVEL, Representation

T = TypeVar("T")
V = TypeVar("V")
Steps = Generator[None, None, T]  # yields between two steps, returns what was made
# Bytes compressed between two yields: a step of compression, like a step of counting,
# costs a fraction of the time a cheap request may wait.
COMPRESS_STEP = 64 * 1024
_GZIP_WRAPPER = 31  # zlib's window bits that write a gzip header and trailer
# What an entry holds beside its answer's bytes and its key's text: the key's tuple and
# strings' headers, the answer's object, the ordered dict's slot and links.
ENTRY_BYTES = 512


class KeptAnswers(Generic[V]):
    """Answers kept by what was asked, for one change count of the history at a time."""

    def __init__(
        self,
        max_bytes: int,
        size: Callable[[V], int],
        given_up: Callable[[V], None] | None = None,
    ) -> None:
        """Keep answers up to ``max_bytes`` of them, each as large as ``size`` says;
        ``given_up`` is called with each answer dropped (to free what it holds at once
        rather than when the collector finds it)."""
        self.max_bytes = max_bytes
        self._size = size
        self._given_up = given_up
        self._answers: OrderedDict[Hashable, V] = OrderedDict()
        self._made_at = -1  # the history's change count the answers were made at
        self.bytes = 0  # the bytes of the answers kept, their keys and entries

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, ask: Hashable, changes: int) -> V | None:
        """The answer kept for ``ask`` at the history's change count ``changes``, if any.

        Args:
            ask: what was asked (the same for the same answer).
            changes: the history's change count now; answers of another are dropped.

        Returns:
            The answer, now the most recently asked for; None if none is kept.
        """
        self._follow(changes)
        answer = self._answers.get(ask)
        if answer is not None:
            self._answers.move_to_end(ask)
        return answer

    def put(self, ask: Hashable, changes: int, answer: V) -> None:
        """Keep ``answer``, made at the change count ``changes``, then give up the least
        recently asked for until what is kept fits the budget. An answer made before the
        history last changed is not kept: the next request makes it anew."""
        if changes < self._made_at:
            return
        self._follow(changes)
        old = self._answers.pop(ask, None)
        if old is not None:
            self._drop(ask, old, given_up=old is not answer)  # the same answer again stays
        self._answers[ask] = answer
        self.bytes += self._cost(ask, answer)
        while self.bytes > self.max_bytes:
            self._drop(*self._answers.popitem(last=False))

    def _cost(self, ask: Hashable, answer: V) -> int:
        """The bytes an entry holds: its answer, its key's text and the entry itself."""
        return self._size(answer) + key_bytes(ask) + ENTRY_BYTES

    def _drop(self, ask: Hashable, answer: V, given_up: bool = True) -> None:
        self.bytes -= self._cost(ask, answer)
        if given_up and self._given_up is not None:
            self._given_up(answer)

    def _follow(self, changes: int) -> None:
        if changes != self._made_at:
            while self._answers:
                self._drop(*self._answers.popitem())
            self._made_at = changes


def key_bytes(ask: Hashable) -> int:
    """The text a key holds (its strings and bytes, in tuples at any depth): what a client
    chose, such as a raw query string, and may make as long as a request line allows."""
    if isinstance(ask, (str, bytes)):
        return len(ask)
    if isinstance(ask, tuple):
        return sum(map(key_bytes, ask))
    return 0


def body_size(answer: Representation) -> int:
    """The bytes an answer holds: its body (its headers are a few dozen bytes)."""
    return len(answer.body)


def at_once(steps: Steps[T]) -> T:
    """What ``steps`` returns, every step made at once (for callers off the event loop)."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


def encoded_steps(identity: Representation, coding: str) -> Steps[Representation]:
    """The identity representation in ``gzip`` or ``br``, compressed COMPRESS_STEP bytes a
    step: the same codings, at the same levels, as ``bodies.encoded``.

    Args:
        identity: the uncompressed answer.
        coding: gzip or br.

    Returns:
        The compressed representation, its ETag the identity's tagged with the coding.
    """
    compress: Callable[[bytes], bytes]
    if coding == "gzip":
        gzip = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, _GZIP_WRAPPER)
        compress, finish = gzip.compress, gzip.flush
    else:
        br = brotli.Compressor(quality=BROTLI_QUALITY)
        compress, finish = br.process, br.finish
    body = identity.body
    parts = []
    for start in range(0, len(body), COMPRESS_STEP):
        if start:
            yield
        parts.append(compress(body[start : start + COMPRESS_STEP]))
    parts.append(finish())
    tag = identity.etag.strip('"')
    return Representation(b"".join(parts), f'"{tag}-{coding}"', identity.modified, coding)
