"""A response body with its validators and content codings, built once per change; and a
large body's bytes in a memory file, which the server sends with ``os.sendfile``."""

from __future__ import annotations

import asyncio
import fcntl
import gzip
import hashlib
import os
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from functools import cached_property

import brotli

GZIP_LEVEL = 6
BROTLI_QUALITY = 6  # the highest qualities cost seconds per snapshot for a few % of size
CODINGS = ("gzip", "br")
# A body smaller than this is sent as bytes: the copies a file saves cost about what its
# extra system calls do (the headers go in one of their own). A memory file's pages are
# shared memory (Shmem), outside the process's RSS.
SENDFILE_MIN = 128 * 1024
_NO_FILE = -1  # made and failed (no memfd here, or no descriptor left), or closed
_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


class BodyFile:
    """A body's bytes and, once asked for, the same bytes in an anonymous memory file (a
    sealed Linux memfd): ``os.sendfile`` hands its pages to a socket, where bytes written
    to a socket are copied, and by aiohttp before that. The file is closed when this object
    is dropped (with the crawl or answer it belongs to) or by ``close()``; pickled, only
    the bytes travel."""

    __slots__ = ("__weakref__", "_closer", "_fd", "body")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self._fd: int | None = None  # None: not made yet
        self._closer: weakref.finalize[[int], BodyFile] | None = None

    def __reduce__(self) -> tuple[type[BodyFile], tuple[bytes]]:
        return BodyFile, (self.body,)

    def large(self) -> bool:
        """Whether the body is large enough to be sent from a memory file."""
        return len(self.body) >= SENDFILE_MIN

    def fd(self) -> int | None:
        """The memory file's descriptor, made on the first call; None if the body is under
        SENDFILE_MIN, or no file could be made (not Linux, or no descriptor left), or it
        was closed: the body is then sent as bytes."""
        if self._fd is None:
            made = _memory_file(self.body) if self.large() else None
            self._fd = _NO_FILE if made is None else made
            if made is not None:
                self._closer = weakref.finalize(self, os.close, made)
        return None if self._fd == _NO_FILE else self._fd

    def close(self) -> None:
        """Close the memory file, if one was made; later calls of ``fd()`` return None."""
        if self._closer is not None:
            self._closer()
        self._fd = _NO_FILE


def _memory_file(body: bytes) -> int | None:
    try:
        fd = os.memfd_create("crawldash-body", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, OSError):  # not Linux, or out of descriptors
        return None
    try:
        view, written = memoryview(body), 0
        while written < len(body):
            written += os.write(fd, view[written:])
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)  # what is sent is what was hashed
    except OSError:
        os.close(fd)
        return None
    return fd


@dataclass(frozen=True)
class Representation:
    """Bytes to send, their strong ETag and Last-Modified, and their Content-Encoding."""

    body: bytes
    etag: str
    modified: int  # unix seconds, for If-Modified-Since
    encoding: str | None = None
    headers: dict[str, str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        headers = {"ETag": self.etag, "Last-Modified": formatdate(self.modified, usegmt=True)}
        if self.encoding:
            headers["Content-Encoding"] = self.encoding
        object.__setattr__(self, "headers", headers)

    @cached_property
    def file(self) -> BodyFile:
        """The body, to be sent from a memory file if it is large (made in the server, on
        the first request that sends it)."""
        return BodyFile(self.body)


def release_files(representations: Iterable[Representation]) -> None:
    """Close the memory files of bodies no longer served (a send under way goes on as
    bytes), rather than when the collector finds the crawl they belonged to."""
    for representation in representations:
        made = representation.__dict__.get("file")  # made on a first send, else never
        if made is not None:
            made.close()


def tag_of(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=12).hexdigest()


def represent(body: bytes, modified: float) -> Representation:
    """The identity representation of ``body``, last modified at unix time ``modified``."""
    return Representation(body, f'"{tag_of(body)}"', int(modified))


class Codings(dict[str, Representation]):
    """A body's representations by content coding, identity always among them. A coding
    asked for before it was made (a new crawl's codings follow it) is made then, and kept:
    for bodies small enough to compress on the event loop (a breakdown, the map)."""

    def __missing__(self, coding: str) -> Representation:
        if coding not in CODINGS:
            raise KeyError(coding)
        made = self[coding] = encoded(self["identity"], coding)
        return made


def made_or_identity(
    codings: Mapping[str, Representation], coding: str, identity_ok: bool
) -> Representation | None:
    """A body in ``coding`` if it is made, else in identity if the client takes it
    (``identity_ok``): a new crawl's codings follow it, and until they come nothing of an
    older crawl is sent. None: neither."""
    body = codings.get(coding)
    return codings["identity"] if body is None and identity_ok else body


def every_coding(codings: Mapping[str, Representation]) -> dict[str, Representation]:
    """The codings of a body but identity (gzip and br), made now. Slow: off the loop."""
    identity = codings["identity"]
    return {coding: encoded(identity, coding) for coding in CODINGS}


def compressed(identity: Representation) -> dict[str, Representation]:
    """Every representation of a body: identity, gzip and br. Slow: run it off the loop."""
    return {"identity": identity, **{coding: encoded(identity, coding) for coding in CODINGS}}


def encoded(identity: Representation, coding: str) -> Representation:
    """The identity representation in one content coding, ``gzip`` or ``br``."""
    if coding == "gzip":
        body = gzip.compress(identity.body, GZIP_LEVEL, mtime=0)
    else:
        body = brotli.compress(identity.body, quality=BROTLI_QUALITY)
    tag = identity.etag.strip('"')
    return Representation(body, f'"{tag}-{coding}"', identity.modified, coding)


class MadeOnce:
    """Codings made in a thread on request (a new crawl's, before its own come; an archived
    crawl's), each once however many requests ask for it while it is made, by the ETag of
    its identity and the coding: a burst of clients that refuse identity right after a
    switch costs one compression, not one each, and leaves the threads to other work."""

    def __init__(self) -> None:
        self._under_way: dict[tuple[str, str], asyncio.Future[Representation]] = {}

    async def made(self, identity: Representation, coding: str) -> Representation:
        """``identity`` in ``coding`` (gzip or br), made in a thread unless under way."""
        key = (identity.etag, coding)
        under_way = self._under_way.get(key)
        if under_way is None:
            under_way = asyncio.ensure_future(asyncio.to_thread(encoded, identity, coding))
            self._under_way[key] = under_way
            under_way.add_done_callback(lambda done: self._done(key, done))
        # A request that goes (its client gone) leaves the making to the others.
        return await asyncio.shield(under_way)

    def _done(self, key: tuple[str, str], done: asyncio.Future[Representation]) -> None:
        if self._under_way.get(key) is done:
            del self._under_way[key]
        if not done.cancelled():
            done.exception()  # retrieved: every request asking may have gone
