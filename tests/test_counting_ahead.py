"""A batch of older crawls has the first runs of the next one read while it is recorded:
the counting processes never wait for a batch's last crawls to be recorded; what was read
ahead is recorded as if read in its own batch, and a crawl rewritten since is read again."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from crawldash.crawl.count import CrawlCount, count_nodes, read_counts
from crawldash.crawl.decode import Rules
from crawldash.crawl.files import FileVersion, Listing, LoadError, list_data_dir
from crawldash.demo.fake_crawler import generate_crawls
from crawldash.live.refreshing.counting import RUN_LENGTH, Counting
from crawldash.live.refreshing.rejections import Rejections
from crawldash.live.state import State
from crawldash.live.stores.presence import Presence

from .factories import export_body, rows, write_snapshot

TS = 1_700_000_000
CRAWLS = 3 * RUN_LENGTH  # three batches of one run each


class Reads:
    """Counts runs of real files as a counting process does, and which crawls it read."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.asked: list[int] = []

    async def count_file(self, name: str, version: FileVersion, batch: bool) -> CrawlCount:
        self.asked.append(int(name.partition(".")[0]))
        return count_nodes((self.data_dir / name).read_bytes())

    async def count_run(self, files: Sequence[tuple[str, FileVersion]]) -> list[CrawlCount | None]:
        self.asked += [int(name.partition(".")[0]) for name, _ in files]
        paths = [self.data_dir / name for name, _ in files]
        counted = read_counts(paths, Rules(10**7))
        assert not any(isinstance(c, LoadError) for c in counted)
        return counted  # type: ignore[return-value]


def backlog(tmp_path: Path) -> tuple[Path, Listing, Counting, Reads]:
    data_dir = tmp_path / "data"
    for crawl in generate_crawls(nodes=60, crawls=CRAWLS, interval=600, end=TS, seed=7):
        write_snapshot(data_dir, crawl.timestamp, crawl.body())
    listing = list_data_dir(data_dir)
    reads = Reads(data_dir)
    state = State(history_size=100)
    counting = Counting(state, Rejections(), reads.count_file, 2 * RUN_LENGTH, reads.count_run)
    return data_dir, listing, counting, reads


def assert_built_one_by_one(counted: Presence, data_dir: Path, timestamps: Sequence[int]) -> None:
    """The presence answers as one built crawl by crawl from the files as they are."""
    expected, everyone = Presence(), set()
    for timestamp in sorted(timestamps):
        addresses = count_nodes((data_dir / f"{timestamp}.json").read_bytes()).addresses
        expected.add(timestamp, addresses)
        everyone.update(addresses)
    assert counted.timestamps() == expected.timestamps()
    for address in everyone:
        assert counted.runs(address, CRAWLS) == expected.runs(address, CRAWLS)


async def test_the_next_batch_is_read_while_one_is_recorded(tmp_path: Path):
    data_dir, listing, counting, reads = backlog(tmp_path)
    pending = counting.update(listing, listing.newest_first)
    assert len(pending) == CRAWLS
    assert await counting.count(listing, pending[:RUN_LENGTH])
    assert reads.asked == pending[: 2 * RUN_LENGTH]  # the next batch's run, read ahead
    batches = 1
    while pending := counting.update(listing, ()):
        assert await counting.count(listing, pending[:RUN_LENGTH])
        batches += 1
    assert batches == 3
    assert reads.asked == listing.newest_first  # each crawl read once, newest first
    assert_built_one_by_one(counting.state.presence, data_dir, listing.newest_first)


async def test_a_crawl_rewritten_after_it_was_read_ahead_is_read_again(tmp_path: Path):
    data_dir, listing, counting, reads = backlog(tmp_path)
    pending = counting.update(listing, listing.newest_first)
    assert await counting.count(listing, pending[:RUN_LENGTH])
    rewritten = pending[RUN_LENGTH + 1]
    assert rewritten in reads.asked  # read ahead, then rewritten
    write_snapshot(data_dir, rewritten, export_body(rows(9, first_octet=10)))
    listing = list_data_dir(data_dir)
    while pending := counting.update(listing, ()):
        assert await counting.count(listing, pending[:RUN_LENGTH])
    assert reads.asked.count(rewritten) == 2
    assert counting.state.history.get(rewritten).reachable == 9  # type: ignore[union-attr]
    assert_built_one_by_one(counting.state.presence, data_dir, listing.newest_first)
