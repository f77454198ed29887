"""The settings table of ``crawldash demo``, declared as ``serve``'s is: what to generate;
the demo then serves with ``serve``'s settings, less the folders it makes itself."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .options import option, whole_number

SERVER_ONLY = ("data_dir", "state_dir", "networks")  # the serve options demo does not take


@dataclass(frozen=True)
class DemoSettings:
    """``crawldash demo``: what to generate; it then serves with ``Settings``."""

    dir: Path = option(
        Path("demo-data"),
        "where to write the demo (`data/` and `state/` inside)",
        Path,
        shown="`./demo-data`",
        env=None,
    )
    nodes: int = option(15_000, "nodes in the newest crawl", whole_number(10, 1_000_000), env=None)
    days: int = option(7, "days of crawls, one every 10 minutes", whole_number(1, 365), env=None)
    keep_files: int = option(
        24,
        "newest crawl files left in `data/`; older crawls live on in the history index, as "
        "after a crawler prunes its files",
        whole_number(1, 1_000_000),
        env=None,
    )
    seed: int = option(1, "seed of the generator: the same seed, the same folder", int, env=None)
    no_serve: bool = option(
        False, "write the folder and exit", kind="switch", shown="off", env=None
    )
