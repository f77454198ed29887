"""A cold start counts the presence over every crawl it holds (issue 40): real crawl files,
a real server over a socket, cold starts repeated, answers counted against the files."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from crawldash.demo.fake_crawler import generate_crawls

from .factories import write_snapshot
from .helpers import get
from .process import serving, wait_until

CRAWLS, NODES, COLD_STARTS = 61, 8_000, 4


@pytest.mark.slow
@pytest.mark.timeout(600)  # four cold starts over 61 crawls, CPU-bound
def test_cold_starts_count_presence_and_unique_over_every_crawl(tmp_path: Path):
    data_dir, shuffle = tmp_path / "data", random.Random(7)
    end = int(time.time()) // 600 * 600 - 600
    truth: dict[int, set[str]] = {}
    for crawl in generate_crawls(nodes=NODES, crawls=CRAWLS, end=end, seed=3):
        members = list(crawl.members)
        shuffle.shuffle(members)  # rows in a fresh order each crawl, as a crawler writes
        write_snapshot(
            data_dir, crawl.timestamp, b"[" + b",".join(map(crawl.row_of, members)) + b"]"
        )
        truth[crawl.timestamp] = set(crawl.addresses())
    seen = {a: sum(a in crawl for crawl in truth.values()) for a in set().union(*truth.values())}
    probes = sorted((a for a, n in seen.items() if 0 < n < CRAWLS - 2), key=lambda a: seen[a])[-5:]
    for run in range(COLD_STARTS):
        with serving(data_dir, tmp_path / f"state{run}") as base:
            wait_until(lambda: get(f"{base}/api/status")["history_complete"], within=120)
            unique = get(f"{base}/api/unique?window=31536000")
            assert (len(get(f"{base}/api/history")), unique["crawls"]) == (CRAWLS, CRAWLS), run
            assert unique["unique"] == len(seen), run
            for address in probes:
                runs = get(f"{base}/api/presence?address={address}&limit={CRAWLS}")
                assert sum(r["crawls"] for r in runs) == CRAWLS, (run, address)
                assert sum(r["crawls"] for r in runs if r["present"]) == seen[address], run
