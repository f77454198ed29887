"""The benchmark's cold history is as varied as a real one: every crawl a file of its own
(no hardlink), each an independent sample of 85-99% of one export's rows in a fresh order,
so that a node's presence over the history comes in many stretches."""

from __future__ import annotations

import json
from pathlib import Path

from bench.data import INTERVAL, varied_history

END = 1_790_000_000
FILES = 6


def test_every_crawl_is_its_own_sample_of_one_export(tmp_path: Path):
    following = varied_history(tmp_path, FILES, END, later=1)
    paths = sorted(tmp_path.glob("*.json"))
    assert [int(p.stem) for p in paths] == [END - INTERVAL * i for i in range(FILES)][::-1]
    assert all(p.stat().st_nlink == 1 for p in paths)  # no hardlinks
    crawls = [[f"{row[0]}:{row[1]}" for row in json.loads(p.read_bytes())] for p in paths]
    everyone = set().union(*crawls)
    for addresses in crawls:
        assert len(set(addresses)) == len(addresses)
        assert 0.8 * len(everyone) <= len(addresses) <= len(everyone)
    first, second = set(crawls[0]), set(crawls[1])
    assert len(first ^ second) > 0.01 * len(everyone)  # hundreds change, not a few dozen
    common = [a for a in crawls[0] if a in second]
    assert common != [a for a in crawls[1] if a in first]  # each in an order of its own
    later = next(following)
    assert later.timestamp == END + INTERVAL
    assert 0.8 * len(everyone) <= len(later.members) <= len(everyone)
