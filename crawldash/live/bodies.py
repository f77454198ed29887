"""A response body with its validators and content codings, built once per change."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass, field
from email.utils import formatdate

import brotli

GZIP_LEVEL = 6
BROTLI_QUALITY = 6  # the highest qualities cost seconds per snapshot for a few % of size
CODINGS = ("gzip", "br")


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


def tag_of(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=12).hexdigest()


def represent(body: bytes, modified: float) -> Representation:
    """The identity representation of ``body``, last modified at unix time ``modified``."""
    return Representation(body, f'"{tag_of(body)}"', int(modified))


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
