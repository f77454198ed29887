"""Where a value read from bitnodes' Redis becomes a number or a string the bridge keeps, with
bounds, and what a pass skipped, said in a few lines.

Redis holds whatever anyone wrote into it: every value the bridge reads goes through here,
so that one of any size or shape is turned into a bounded value or None, never an error
that ends the bridge. Numbers must be finite and within a range; strings are cut to a
length; JSON is decoded by msgspec into a fixed shape from at most a given number of bytes
(msgspec recurses into nested arrays it skips, so a deep one is refused, not decoded).

What a pass skips is tallied by cause and logged as one line per cause, with a count and
an example, only when the pass met a value not said before; the values said are
remembered up to ``MAX_REMEMBERED``, by a hash of each, the oldest forgotten first.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TypeVar

import msgspec

T = TypeVar("T")
MAX_NUMBER_TEXT = 32  # bytes of a number written as text: more is no number bitnodes writes
MAX_EXAMPLE = 200  # characters of an example in a log line
MAX_REMEMBERED = 10_000  # values said, remembered so as not to say them again
MAX_UNIX_SECONDS = 2**32 - 1  # when a crawl ended
MAX_ELAPSED_SECONDS = 366 * 86_400  # how long a crawl took
MAX_ELAPSED_BYTES = 256  # of an elapsed entry: two numbers as JSON
# An entry of bitnodes' elapsed list: [unix seconds, seconds], or older bitnodes' seconds.
ELAPSED = msgspec.json.Decoder(tuple[float, float] | float)


def text(raw: bytes | str | None, limit: int) -> str | None:
    """``raw`` as text of at most ``limit`` characters (undecodable bytes replaced).

    Args:
        raw: a Redis reply.
        limit: the most characters kept; the rest is dropped.

    Returns:
        The text, or None for None.
    """
    if raw is None:
        return None
    if isinstance(raw, bytes):
        raw = raw[: 4 * limit].decode(errors="replace")  # 4: UTF-8's longest character
    return raw[:limit]


def number(raw: object, low: float, high: float) -> float | None:
    """A finite number from ``low`` to ``high``, from text or an int or float.

    Args:
        raw: a Redis reply (bytes or text) or a decoded JSON number.
        low: the least accepted.
        high: the greatest accepted.

    Returns:
        The number, or None when ``raw`` is none in range.
    """
    if isinstance(raw, bytes | str):
        if len(raw) > MAX_NUMBER_TEXT:
            return None
        try:
            raw = float(raw)
        except (ValueError, UnicodeDecodeError):
            return None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    value = float(raw)
    return value if math.isfinite(value) and low <= value <= high else None


def whole(raw: object, low: int, high: int) -> int | None:
    """A whole number from ``low`` to ``high``: integer text, an int, or an integral float
    (JSON's numbers).

    Args:
        raw: a Redis reply (bytes or text) or a decoded JSON number.
        low: the least accepted.
        high: the greatest accepted.

    Returns:
        The number, or None when ``raw`` is none in range.
    """
    if isinstance(raw, bytes | str):
        if len(raw) > MAX_NUMBER_TEXT:
            return None
        try:
            raw = int(raw)
        except (ValueError, UnicodeDecodeError):
            return None
    value = number(raw, low, high)
    return int(value) if value is not None and value.is_integer() else None


def decoded(raw: bytes, decoder: msgspec.json.Decoder[T], max_bytes: int) -> T | None:
    """``raw`` decoded from JSON by ``decoder``, from at most ``max_bytes``.

    Args:
        raw: a Redis reply.
        decoder: of the shape it must have (out-of-range numbers are refused).
        max_bytes: the most bytes decoded; a longer value is refused unread.

    Returns:
        The value, or None when it is too long, malformed or of another shape.
    """
    if len(raw) > max_bytes:
        return None
    try:
        return decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):  # msgspec recurses into nested arrays
        return None


def elapsed_entry(raw: bytes) -> tuple[int | None, float | None]:
    """When a crawl ended and how long it took, from an entry of bitnodes' ``elapsed``.

    Args:
        raw: the entry: ``[unix seconds, seconds]``, or older bitnodes' plain seconds.

    Returns:
        ``(ended, seconds)``; ``ended`` None for plain seconds, and both None for an entry
        of any other shape or with either out of bounds.
    """
    value = decoded(raw, ELAPSED, MAX_ELAPSED_BYTES)
    if isinstance(value, tuple):
        ended = whole(value[0], 0, MAX_UNIX_SECONDS)
        seconds = number(value[1], 0, MAX_ELAPSED_SECONDS)
        return (ended, seconds) if ended is not None and seconds is not None else (None, None)
    return None, number(value, 0, MAX_ELAPSED_SECONDS)


@dataclass
class _Tally:
    count: int = 0  # values skipped this pass
    new: int = 0  # of them, not said before
    example: str = ""  # the first of the new ones


class Skips:
    """What a pass skipped, by cause: ``skip`` as it goes, ``report`` at its end."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self._said: dict[int, None] = {}  # hashes of values said, oldest first
        self._pass: dict[str, _Tally] = {}

    def skip(self, cause: str, value: object, example: object | None = None) -> None:
        """Note that ``value`` was skipped for ``cause``.

        Args:
            cause: why, as the log line says it (a few fixed texts, never a value).
            value: what was skipped (a key, or a key and its value): said once.
            example: what the log line shows of it: as it is when text, else its
                ``repr``; ``value``'s when None.
        """
        tally = self._pass.setdefault(cause, _Tally())
        tally.count += 1
        said = hash((cause, value))
        if said in self._said:
            return
        if len(self._said) >= MAX_REMEMBERED:
            del self._said[next(iter(self._said))]
        self._said[said] = None
        tally.new += 1
        if tally.new == 1:
            shown = (
                example if isinstance(example, str) else repr(value if example is None else example)
            )
            tally.example = shown[:MAX_EXAMPLE]

    def report(self) -> None:
        """Log one line per cause that met a value not said before, and start a new pass."""
        for cause, tally in self._pass.items():
            if tally.new:
                self.logger.warning(
                    "%s (%d this pass, %d not said before), e.g. %s",
                    cause,
                    tally.count,
                    tally.new,
                    tally.example,
                )
        self._pass = {}
