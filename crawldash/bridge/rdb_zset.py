"""A large sorted set as Redis' ``DUMP`` serializes it, read back into members and scores.

``ZRANGE ... WITHSCORES`` makes Redis write each score as text, and a client parse it back:
for a block's ten thousand announcements that costs more than the bridge's pass may take.
``DUMP`` writes a skiplist-encoded sorted set (RDB type 5, Redis 4 and later) with its
scores as 8-byte binary doubles, greatest first. Only that encoding is read here; small
sets (listpack, ziplist) and anything else are left to ``ZRANGE``, which is cheap for them.

The format (Redis' ``rdb.c``): one type byte, the element count, then each element as a
string (a length and its bytes, or an integer, or LZF-compressed bytes) followed by its
score; then a 2-byte RDB version and an 8-byte checksum, where the elements must end.
"""

from __future__ import annotations

import struct

ZSET_2 = 5  # RDB_TYPE_ZSET_2: a skiplist-encoded sorted set, binary scores
_SCORE = struct.Struct("<d")
_INTEGERS = {0: struct.Struct("<b"), 1: struct.Struct("<h"), 2: struct.Struct("<i")}
_LZF = 3  # RDB_ENC_LZF
TRAILER = 10  # after the elements: the RDB version (2 bytes) and a CRC64 (8)
# A plain string of N bytes and its score, as a struct format, the string's length skipped:
# one byte under 64 bytes (an address), two under 16,384 (an onion or I2P name).
_ONE_BYTE_LENGTH = [f"x{size}sd" for size in range(64)]
_TWO_BYTE_LENGTH = [f"2x{size}sd" for size in range(256)]


class NotASkiplist(ValueError):
    """The payload is not a skiplist-encoded sorted set (or is cut short)."""


def read_zset_dump(payload: bytes) -> tuple[list[bytes], list[float]]:
    """The members and scores of a ``DUMP`` payload, in ascending order of (score, member),
    as ``ZRANGE`` gives them.

    Args:
        payload: what ``DUMP key`` returned.

    Returns:
        The members and their scores, two lists of one length.

    Raises:
        NotASkiplist: the payload holds anything else, or is malformed.
    """
    if not payload or payload[0] != ZSET_2:
        raise NotASkiplist(f"RDB type {payload[0] if payload else None}, not {ZSET_2}")
    try:
        count, position = _length(payload, 1)
        members, scores = _elements(payload, position, count)
    except (IndexError, struct.error) as exc:
        raise NotASkiplist(f"cut short: {exc}") from None
    members.reverse()  # written greatest first
    scores.reverse()
    if scores != sorted(scores):  # never from Redis; a cheap check, in case
        pairs = sorted(zip(scores, members, strict=True))
        scores, members = [s for s, _ in pairs], [m for _, m in pairs]
    return members, scores


def _elements(payload: bytes, position: int, count: int) -> tuple[list[bytes], list[float]]:
    """The elements from ``position``: all at once by one ``struct`` format made from their
    lengths when every member is a plain string (ping.py's are), else one by one."""
    start, parts = position, list[str]()
    part = parts.append
    for _ in range(count):
        first = payload[position]
        if first < 64:
            part(_ONE_BYTE_LENGTH[first])
            position += first + 9
        elif first < 128:
            size = (first & 0x3F) << 8 | payload[position + 1]
            part(_TWO_BYTE_LENGTH[size] if size < 256 else f"2x{size}sd")
            position += size + 10
        else:  # a longer, an integer or a compressed string: read each element in turn
            return _each_element(payload, start, count)
    _ends_at_trailer(payload, position)
    values = struct.unpack_from("<" + "".join(parts), payload, start)
    return list(values[0::2]), list(values[1::2])


def _each_element(payload: bytes, position: int, count: int) -> tuple[list[bytes], list[float]]:
    members: list[bytes] = []
    scores: list[float] = []
    for _ in range(count):
        member, position = _string(payload, position)
        members.append(member)
        scores.append(_SCORE.unpack_from(payload, position)[0])
        position += 8
    _ends_at_trailer(payload, position)
    return members, scores


def _ends_at_trailer(payload: bytes, position: int) -> None:
    """The elements must end where the RDB version and the checksum begin: a payload laid
    out otherwise than read here is refused, not misread."""
    if position != len(payload) - TRAILER:
        raise NotASkiplist(f"the elements end at {position}, not {len(payload) - TRAILER}")


def _length(payload: bytes, position: int) -> tuple[int, int]:
    """A plain length and the position after it."""
    first = payload[position]
    kind = first >> 6
    if kind == 0:
        return first & 0x3F, position + 1
    if kind == 1:
        return (first & 0x3F) << 8 | payload[position + 1], position + 2
    if first == 0x80:
        return struct.unpack_from(">I", payload, position + 1)[0], position + 5
    if first == 0x81:
        return struct.unpack_from(">Q", payload, position + 1)[0], position + 9
    raise NotASkiplist(f"a string encoding where a length was expected: {first:#x}")


def _string(payload: bytes, position: int) -> tuple[bytes, int]:
    """A string in any of its encodings, and the position after it."""
    first = payload[position]
    if first >> 6 != 3:
        size, position = _length(payload, position)
        return payload[position : position + size], position + size
    encoding = first & 0x3F
    if encoding in _INTEGERS:
        number = _INTEGERS[encoding].unpack_from(payload, position + 1)[0]
        return str(number).encode(), position + 1 + _INTEGERS[encoding].size
    if encoding == _LZF:
        packed_size, position = _length(payload, position + 1)
        size, position = _length(payload, position)
        packed = payload[position : position + packed_size]
        return lzf_decompress(packed, size), position + packed_size
    raise NotASkiplist(f"unknown string encoding {encoding}")


def lzf_decompress(packed: bytes, size: int) -> bytes:
    """LZF, as Redis compresses strings of over 20 bytes when that saves space.

    Args:
        packed: the compressed bytes.
        size: the length they decompress to.

    Returns:
        The decompressed bytes.
    """
    out = bytearray()
    position = 0
    while position < len(packed):
        control = packed[position]
        position += 1
        if control < 32:  # a run of control + 1 literal bytes
            out += packed[position : position + control + 1]
            position += control + 1
            continue
        length = control >> 5
        if length == 7:
            length += packed[position]
            position += 1
        start = len(out) - ((control & 0x1F) << 8) - packed[position] - 1
        position += 1
        if start < 0:
            raise NotASkiplist("LZF back-reference before the start")
        for offset in range(length + 2):  # may overlap what it copies
            out.append(out[start + offset])
    if len(out) != size:
        raise NotASkiplist(f"LZF gave {len(out)} bytes, not {size}")
    return bytes(out)
