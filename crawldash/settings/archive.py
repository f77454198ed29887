"""The settings table of ``crawldash archive``, declared as ``serve``'s is (its
``--archive-dir`` is in ``serve.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .options import byte_size, option, whole_number


@dataclass(frozen=True)
class ArchiveSettings:
    """``crawldash archive``: convert a data folder's crawls into the Parquet archive."""

    data_dir: Path = option(
        None, "the crawler's output folder to archive", Path, shown="required", required=True
    )
    archive_dir: Path = option(
        None,
        "the archive's folder (as `serve --archive-dir`)",
        Path,
        shown="required",
        required=True,
    )
    network: str = option(
        "main", "the network's name: its `network=NAME/` folder in the archive", env=None
    )
    max_clock_skew: int = option(
        3600,
        "seconds a crawl may be named ahead of this machine's clock; later ones are left "
        "for a later run",
        whole_number(0, 10**9),
        env=None,
    )
    max_file_size: int = option(
        256 * 1024**2, "larger crawler files are skipped", byte_size, shown="`256M`", env=None
    )
