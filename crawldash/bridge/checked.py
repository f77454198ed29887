"""The bridge's side of the live check's hand-off: each successful check serve left in the
hand-off folder is added to bitnodes' ``check`` sorted set (member ``[address, port,
services]`` as bitnodes' ``json.dumps`` writes it, score the check's time), which
``crawl.py`` merges into its next crawl when ``include_checked`` is on; then the file is
removed.

Whatever is in the folder is input: only regular files are read, opened so that nothing
(a FIFO, a device, a link) can make a pass wait, and a check reaches Redis only with an
address in crawldash's one canonical spelling (``crawl/address.py``, the parser the live
check keys on), which bitnodes' ``restart()`` reads without error. Anything else is
dropped, with one log line per cause and pass: a file is removed, a folder left alone
(it is not the bridge's to empty) and said once.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import redis

from ..checknode.handoff import MAX_FILE_BYTES, SUFFIX, HandedCheck
from ..crawl.address import AddressError, canonical_host

log = logging.getLogger(__name__)
CHECK_KEY = "check"  # bitnodes' sorted set of checked nodes
BATCH = 1000  # files handed over per pass at most
# services is an unsigned 64-bit field: bitnodes packs it into the version message it
# sends the node, where a larger value raises
MAX_SERVICES = 2**64 - 1
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_decoder = msgspec.json.Decoder(HandedCheck)


class Dropped(Exception):
    """A hand-off file that holds no check bitnodes can take; the message is the cause."""


def member(check: HandedCheck) -> str:
    """bitnodes' member for a checked node: ``json.dumps([address, port, services])``,
    with json's default separators (``["203.0.113.5", 8333, 1037]``)."""
    return json.dumps([check.address, check.port, check.services])


def read_check(path: Path) -> HandedCheck:
    """The check a hand-off file holds, its address in the canonical spelling.

    Raises:
        Dropped: the entry is not a regular file, or holds no check bitnodes can take.
        FileNotFoundError: it was removed meanwhile.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)  # a FIFO opens at once; a link is refused
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Dropped("not a regular file") from None
        raise Dropped(f"unreadable ({errno.errorcode.get(exc.errno or 0, 'error')})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Dropped("not a regular file")
        data = os.read(fd, MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise Dropped(f"unreadable ({errno.errorcode.get(exc.errno or 0, 'error')})") from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise Dropped(f"larger than {MAX_FILE_BYTES} bytes")
    try:
        check = _decoder.decode(data)
    except msgspec.DecodeError:  # ValidationError included
        raise Dropped("not a check") from None
    try:
        address = canonical_host(check.address)
    except AddressError:
        raise Dropped("not an IP address, .onion or .b32.i2p host") from None
    if check.services > MAX_SERVICES:
        raise Dropped("services over 64 bits")
    return HandedCheck(address, check.port, check.services, check.checked_at)


@dataclass
class Waiting:
    """The folder's entries at one look: the regular files to read, and what is not."""

    files: list[Path] = field(default_factory=list)  # oldest first, at most the limit
    folders: list[str] = field(default_factory=list)
    others: list[Path] = field(default_factory=list)  # FIFOs, links, sockets, devices


def waiting(folder: Path, limit: int) -> Waiting:
    """The entries waiting in ``folder`` (by their directory entry, nothing opened):
    regular files oldest first, at most ``limit``; what is not a regular file never takes
    a place among them."""
    found = Waiting()
    names = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if not entry.name.endswith(SUFFIX) or entry.name.startswith("."):
                continue
            if entry.is_file(follow_symlinks=False):
                names.append(entry.name)
            elif entry.is_dir(follow_symlinks=False):
                found.folders.append(entry.name)
            else:
                found.others.append(Path(entry.path))
    found.files = [folder / name for name in sorted(names)[:limit]]
    return found


class CheckedCollector:
    """Hands the checks waiting in ``folder`` over to ``client``'s ``check`` set."""

    def __init__(self, client: redis.Redis, folder: Path) -> None:
        self.client, self.folder = client, folder
        self._folders_said: set[str] = set()

    def collect(self, now: float) -> None:
        """One pass: every waiting check added (in one round trip), then its file removed.

        Args:
            now: the pass's time (unused: each check keeps its own time as the score).
        """
        found = waiting(self.folder, BATCH)
        self._say_folders(found.folders)
        dropped: dict[str, list[Path]] = {}
        if found.others:
            dropped["not a regular file"] = found.others
        scores: dict[str, float] = {}
        for path in found.files:
            try:
                check = read_check(path)
            except FileNotFoundError:
                continue
            except Dropped as why:
                dropped.setdefault(str(why), []).append(path)
                continue
            key = member(check)
            scores[key] = max(scores.get(key, 0), check.checked_at)
        for cause, paths in dropped.items():
            for path in paths:
                path.unlink(missing_ok=True)
            names = [path.name for path in paths]
            log.warning(
                "removed %d hand-off files that hold no check (%s): %s",
                len(names),
                cause,
                names[:3],
            )
        if not scores:
            return
        self.client.zadd(CHECK_KEY, scores)  # a RedisError keeps the files for the next pass
        for path in found.files:  # those dropped are gone already
            path.unlink(missing_ok=True)
        log.debug("handed %d checks to bitnodes' %s set", len(scores), CHECK_KEY)

    def _say_folders(self, names: list[str]) -> None:
        """Folders in the hand-off folder are left there and passed over: said once each."""
        new = sorted(set(names) - self._folders_said)
        self._folders_said = set(names)
        if new:
            log.warning(
                "left %d folders in the hand-off folder alone (not checks): %s",
                len(new),
                new[:3],
            )

    def flush(self) -> None:
        """Nothing is kept between passes."""
