"""A reply of the loader process, as a child writes it and the server reads it: the
in-memory file sent with its length (``process.send_reply``), in which the pickle comes
first and each large bytes object it names follows it (``packed``). The server reads the
large objects straight into bytes objects of their own with the GIL released, and
unpickles only the rest holding it."""

from __future__ import annotations

import io
import os
import pickle
import socket
import struct
from typing import Any

SIZE = struct.Struct(">Q")  # the length of a reply's pickle, at the start of its file
HEADER = struct.Struct(">QB")  # sent with a reply's file: its length, and whether more follow
LARGE = 16 * 1024  # bytes objects at least this long follow a reply's pickle, not in it


def received(loader: socket.socket) -> tuple[Any, int]:
    """The next reply from the loader process, and whether more follow it."""
    header, fds, _, _ = socket.recv_fds(loader, HEADER.size, 1)
    if len(header) != HEADER.size or len(fds) != 1:
        for fd in fds:
            os.close(fd)
        raise EOFError
    size, more = HEADER.unpack(header)
    return unpacked(fds[0], size), more


def unpacked(fd: int, size: int) -> Any:
    """The reply in the first ``size`` bytes of ``fd`` (closed after), as ``packed()`` wrote
    it; EOFError if cut short or naming more (refused before ``os.pread`` allocates it)."""
    with open(fd, "rb", buffering=0):
        (length,) = SIZE.unpack(_read(fd, SIZE.size, 0))
        following = SIZE.size + length
        if following > size:
            raise EOFError
        return _Unpickler(_read(fd, length, SIZE.size), fd, following, size).load()


class _Unpickler(pickle.Unpickler):
    """Unpickles a reply; each large bytes object it names is read from the file once."""

    def __init__(self, stream: bytes, fd: int, following: int, size: int) -> None:
        super().__init__(io.BytesIO(stream))
        self.fd, self.following, self.size = fd, following, size
        self.read: dict[tuple[int, int], bytes] = {}

    def persistent_load(self, pid: Any) -> bytes:
        start, length = place = pid
        if place not in self.read:
            if self.following + start + length > self.size:
                raise EOFError
            self.read[place] = _read(self.fd, length, self.following + start)
        return self.read[place]


def _read(fd: int, length: int, offset: int) -> bytes:
    """``length`` bytes of ``fd`` from ``offset``, read with the GIL released (into the
    bytes object returned, when they come in one call, as from an in-memory file)."""
    data = os.pread(fd, length, offset)
    while len(data) < length:
        more = os.pread(fd, length - len(data), offset + len(data))
        if not more:
            raise EOFError
        data += more
    return data


class _Pickler(pickle.Pickler):
    """Pickles a reply, setting aside each large bytes object (once, however often it is
    referred to): it is named by its place among those that follow the pickle,
    ``(start, length)``."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=5)
        self.large: list[bytes] = []  # held, so that the ids below stay theirs
        self.places: dict[int, tuple[int, int]] = {}  # by id()
        self.following = 0  # bytes set aside so far

    def persistent_id(self, obj: Any) -> tuple[int, int] | None:
        if type(obj) is not bytes or len(obj) < LARGE:
            return None
        place = self.places.get(id(obj))
        if place is None:
            place = self.places[id(obj)] = self.following, len(obj)
            self.large.append(obj)
            self.following += len(obj)
        return place


def packed(reply: Any) -> list[bytes]:
    """A reply as written to its file: the pickle's length, the pickle, then the large
    bytes objects it refers to."""
    stream = io.BytesIO()
    pickler = _Pickler(stream)
    pickler.dump(reply)
    return [SIZE.pack(stream.tell()), stream.getvalue(), *pickler.large]
