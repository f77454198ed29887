"""live/stores/index_codec.py: the presence index's bytes, round trips and refusals."""

from __future__ import annotations

import msgspec
import pytest
from pyroaring import BitMap

from crawldash.live.stores.index_codec import (
    FORMAT,
    decode_presence,
    encode_presence,
    encode_presence_in_slices,
)
from crawldash.live.stores.presence import BASE_SLOT, Presence


def sample() -> Presence:
    presence = Presence()
    presence.add(100, ["a:1", "b:1"])
    presence.add(200, ["b:1"])
    presence.add(300, ["a:1", "c:1"])
    return presence


def test_a_presence_round_trips():
    again = decode_presence(encode_presence(sample()))
    assert again.timestamps() == [100, 200, 300]
    assert again.runs("a:1", 10) == sample().runs("a:1", 10)
    assert again.summary("b:1") == sample().summary("b:1")
    assert again.summary("c:1").first_seen == 300


def test_forgotten_crawls_are_stripped_when_encoded():
    presence = sample()
    presence.retain(lambda t: t >= 200)
    again = decode_presence(encode_presence(presence))
    assert again.timestamps() == [200, 300]
    assert again.summary("a:1").seen == 1
    assert set(again.parts()[2]) == {"a:1", "b:1", "c:1"}


async def test_encoding_in_slices_gives_the_same_bytes():
    assert await encode_presence_in_slices(sample()) == encode_presence(sample())


def test_an_empty_presence_round_trips():
    assert len(decode_presence(encode_presence(Presence()))) == 0


def raw(low: int, timestamps: list[int], addresses: list[str], bitmaps: list[bytes]) -> bytes:
    return msgspec.msgpack.encode([FORMAT, low, timestamps, addresses, bitmaps])


def bitmap_of(*slots: int) -> bytes:
    return bytes(BitMap(slots).serialize())


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (msgspec.msgpack.encode([FORMAT + 1]), "unknown format version"),
        (b"\xc1", "malformed"),
        (raw(BASE_SLOT, [1], ["a:1"], []), "as many bitmaps"),
        (raw(BASE_SLOT, [2, 1], [], []), "out of order"),
        (raw(-1, [1], [], []), "slots out of range"),
        (raw(BASE_SLOT, [1], ["a:1"], [bitmap_of(BASE_SLOT + 1)]), "a:1 is out of range"),
        (raw(BASE_SLOT, [1], ["a:1"], [b""]), "a:1 is out of range"),
    ],
    ids=["format", "garbage", "bitmaps", "order", "low", "bit-past", "empty-bitmap"],
)
def test_an_inconsistent_index_is_a_value_error(data: bytes, reason: str):
    with pytest.raises(ValueError, match=reason):
        decode_presence(data)
