"""How big and how long a run is: ``make bench``'s defaults, ``--quick``'s, and the env knobs
BENCH_RUNS, BENCH_SECONDS and BENCH_DIR (BENCH_QUICK=1 is ``--quick``)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Config:
    quick: bool
    runs: int  # wrk runs per cell
    seconds: int  # each run's length
    root: Path  # where data, state folders and logs go (BENCH_DIR)
    starts: int  # start-ups timed for each start-up row: one varies by a third
    history_files: int  # crawl files in the served folder
    distinct: int  # real-size crawls the older history files are hardlinks of
    big_nodes: int  # the separate folder's one large crawl
    tries: int  # crawls written and waited for, in each written -> served row
    cold_crawls: int  # crawl files of the cold-history scenario
    presence_crawls: int  # crawls fed to the presence store (bench.studies.presence)
    wait_limit: float  # seconds a written crawl is waited for before it counts as late

    @property
    def pairs(self) -> int:
        """One-second runs of a cell beside aiohttp's ceiling, each followed by one of its."""
        return self.runs * self.seconds

    @property
    def loading_seconds(self) -> int:
        """Each run of /api/check while crawls are written, one a second: at least 2 s, so
        that one is written within it."""
        return max(self.seconds, 2)

    @property
    def later(self) -> int:
        """Crawls the run writes into the served folder after the newest present: ``tries``
        each in scenarios freshness, busy-cores, saturated and peer (alt-bitnodes'), and
        those written while the p99s are measured (four URLs in freshness, two in peer)."""
        return 4 * self.tries + 6 * self.runs * self.loading_seconds + 4

    @classmethod
    def of(cls, quick: bool, env: Mapping[str, str]) -> Config:
        """Quick: every scenario, for a few seconds each. Set env knobs win either way."""
        quick = quick or env.get("BENCH_QUICK") == "1"
        runs = int(env.get("BENCH_RUNS", "1" if quick else "3"))
        seconds = int(env.get("BENCH_SECONDS", "1" if quick else "5"))
        root = Path(env.get("BENCH_DIR", str(Path(tempfile.gettempdir()) / "crawldash-bench")))
        if quick:
            return cls(
                quick=True,
                runs=runs,
                seconds=seconds,
                root=root,
                starts=1,
                history_files=60,
                distinct=4,
                big_nodes=30_000,
                tries=3,
                cold_crawls=50,
                presence_crawls=288,
                wait_limit=8.0,
            )
        return cls(
            quick=False,
            runs=runs,
            seconds=seconds,
            root=root,
            starts=5,
            history_files=8640,
            distinct=144,
            big_nodes=100_000,
            tries=20,
            cold_crawls=1000,
            presence_crawls=8640,
            wait_limit=30.0,
        )
