"""The presence index on disk: the bytes of a ``Presence``, and a ``Presence`` from them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from itertools import pairwise

import msgspec
from pyroaring import BitMap

from ...models import Base
from .presence import SLICE, Presence

FORMAT = 1  # the first field of every format; another is rebuilt, never misread
_SLOTS = 1 << 32  # slots a bitmap can hold


class _Head(Base, frozen=True, array_like=True):
    """Any format's first field (the others are ignored)."""

    format: int


class _File(Base, frozen=True, array_like=True):
    format: int
    low: int  # slot of the oldest crawl
    timestamps: list[int]
    addresses: list[str]
    bitmaps: list[bytes]  # serialized, in the order of ``addresses``


_encoder = msgspec.msgpack.Encoder()
_head_decoder = msgspec.msgpack.Decoder(_Head)
_decoder = msgspec.msgpack.Decoder(_File)


async def encode_presence_in_slices(presence: Presence) -> bytes:
    """``encode_presence`` between two changes, never during one, made on the loop in
    slices of SLICE addresses that yield to requests (the whole takes a few ms per 10,000
    addresses; nothing changes meanwhile, as changes wait for ``lock``)."""
    async with presence.lock:
        await presence.strip_in_slices()
        low, timestamps, bits = presence.parts()
        addresses = list(bits)
        bitmaps: list[bytes] = []
        for start in range(0, len(addresses), SLICE):
            bitmaps.extend(_serialized(bits[a] for a in addresses[start : start + SLICE]))
            await asyncio.sleep(0)
        return _encoder.encode(_File(FORMAT, low, timestamps, addresses, bitmaps))


def encode_presence(presence: Presence) -> bytes:
    """The index file's bytes, at once."""
    presence.strip()
    low, timestamps, bits = presence.parts()
    return _encoder.encode(_File(FORMAT, low, timestamps, list(bits), _serialized(bits.values())))


def _serialized(bitmaps: Iterable[BitMap]) -> list[bytes]:
    """Bitmaps are turned into runs here, after each change: a run then stays a run as
    crawls are added (8 bytes, where a plain array takes 2 per crawl)."""
    serialized = []
    for bitmap in bitmaps:
        bitmap.run_optimize()
        serialized.append(bitmap.serialize())
    return serialized


def decode_presence(data: bytes) -> Presence:
    """An index file's bytes; ValueError if they do not make a consistent index of this
    format (damaged, or written by a version with another)."""
    try:
        version = _head_decoder.decode(data).format
        if version != FORMAT:
            raise ValueError(f"unknown format version {version}")
        saved = _decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None
    stamps = saved.timestamps
    if len(saved.addresses) != len(saved.bitmaps):
        raise ValueError("as many bitmaps as addresses expected")
    if any(a >= b for a, b in pairwise(stamps)):
        raise ValueError("crawls out of order")
    if not 0 <= saved.low <= saved.low + len(stamps) <= _SLOTS:
        raise ValueError(f"slots out of range from {saved.low}")
    slots = range(saved.low, saved.low + len(stamps))
    bits: dict[str, BitMap] = {}
    for address, serialized in zip(saved.addresses, saved.bitmaps, strict=True):
        try:
            bitmap = BitMap.deserialize(serialized)
        except (ValueError, IndexError):  # pyroaring: IndexError for empty bytes
            bitmap = BitMap()
        if not bitmap or bitmap.min() not in slots or bitmap.max() not in slots:
            raise ValueError(f"the bitmap of {address} is out of range")
        bits[address] = bitmap
    return Presence.restored(saved.low, stamps, bits)
