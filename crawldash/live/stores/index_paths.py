"""Where each index file lives: one per data folder, named by a digest of the folder's
path, and the adoption of a moved folder's indexes. The history index records the folder
it was kept for (its path, and its device and inode, which a rename keeps), so that after
the folder moves, or is copied elsewhere, its indexes are taken over under the new path
rather than left behind while the history is counted again from the files."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from pathlib import Path

from ...crawl.files import snapshot_timestamp
from .saved_history import Folder, Unusable, decode_history

log = logging.getLogger(__name__)
HISTORY_NAME, PRESENCE_NAME = "history.json", "presence.msgpack"


def index_path(state_dir: Path, data_dir: Path, name: str) -> Path:
    """One index per data folder, so that instances over different folders never mix:
    ``name`` with a digest of the folder's path before its suffix."""
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
    return named(state_dir, digest, name)


def named(state_dir: Path, digest: str, name: str) -> Path:
    stem, _, suffix = name.partition(".")
    return state_dir / f"{stem}-{digest}.{suffix}"


def adopt_orphan(state_dir: Path, data_dir: Path) -> bool:
    """When ``data_dir`` has no index of its own: take over (by renaming them) the indexes
    of a folder that is no longer where it was recorded, if it is this one (the same
    device and inode: it was moved or renamed) or, failing that, if its history holds
    crawls of the very versions (size and time) of crawl files present here (it was
    copied or moved to another file system). True if indexes were adopted."""
    here = Folder.of(data_dir)
    own = [index_path(state_dir, data_dir, name) for name in (HISTORY_NAME, PRESENCE_NAME)]
    if here is None or any(path.exists() for path in own):
        return False
    try:
        candidates = sorted(state_dir.glob(named(state_dir, "*", HISTORY_NAME).name))
    except OSError:
        return False
    files: dict[int, tuple[int, int]] | None = None  # the crawl files here, read if needed
    best: tuple[int, Path, Folder] | None = None  # (overlap, index, its folder)
    for path in candidates:
        try:
            folder, entries = decode_history(path.read_bytes())
        except (OSError, Unusable):
            continue
        if folder is None or folder.same_folder(Folder.of(Path(folder.path))):
            continue  # kept before folders were recorded, or its folder is still there
        if folder.same_folder(here):
            best = (len(entries) + 1, path, folder)  # moved: wins over any overlap
            break
        if files is None:
            files = _crawl_versions(data_dir)
        overlap = sum(files.get(e.timestamp) == (e.size, e.mtime_ns) for e in entries)
        if overlap and (best is None or overlap > best[0]):
            best = (overlap, path, folder)
    if best is None:
        return False
    _, path, folder = best
    digest = path.stem.partition("-")[2]
    for name, target in zip((HISTORY_NAME, PRESENCE_NAME), own, strict=True):
        with contextlib.suppress(FileNotFoundError):  # another worker may have taken it
            os.rename(named(state_dir, digest, name), target)
    if not own[0].exists():
        return False
    log.warning("adopted the history of %s for %s", folder.path, here.path)
    return True


def _crawl_versions(data_dir: Path) -> dict[int, tuple[int, int]]:
    """Each crawl file's (size, mtime_ns), by timestamp, as the refresher sees them (links
    followed); one that cannot be read is left out."""
    versions = {}
    try:
        with os.scandir(data_dir) as entries:
            for entry in entries:
                timestamp = snapshot_timestamp(entry.name)
                if timestamp is None:
                    continue
                with contextlib.suppress(OSError):
                    info = entry.stat()
                    versions[timestamp] = (info.st_size, info.st_mtime_ns)
    except OSError:
        pass
    return versions
