"""Large sorted sets read from a real redis-server's DUMP, against its own ZRANGE; and
what the bridge makes of a block read that way, against statistics computed here."""

from __future__ import annotations

import logging
import random
import statistics

import pytest
import redis

from crawldash.bridge import rdb_zset
from crawldash.bridge.block_stats import BlockStats
from crawldash.bridge.rdb_zset import NotASkiplist, read_zset_dump
from crawldash.bridge.redis_values import Skips

from .test_bridge import REDIS, redis_port  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(REDIS is None, reason="redis-server (Debian redis-server) missing"),
]

T0 = 1_790_000_000_000
BLOCK = "00000000000000000003" + "c" * 44


def members_of_every_encoding(count: int) -> dict[str, float]:
    """Members as Redis stores them in each way: short, 64 bytes or more, an integer, and
    long and repetitive (LZF-compressed); some scores shared, some not whole."""
    rng = random.Random(7)
    found: dict[str, float] = {}
    for i in range(count):
        member = [
            f"10.0.{i // 256}.{i % 256}-8333",
            f"{rng.randrange(1 << 31)}",
            "a" * 56 + f".onion-{i}",
            "x" * 70 + str(i),
            f"{''.join(rng.choice('abcdefghijklmnopqrstuvwxyz234567') for _ in range(56))}.onion",
        ][i % 5]
        found[member] = T0 + rng.randrange(50) * 100 + (0.5 if i % 7 == 0 else 0)
    return found


def test_a_dump_reads_as_zrange_gives_it(redis_port: int) -> None:  # noqa: F811
    client = redis.Redis(port=redis_port)
    members = members_of_every_encoding(1000)
    client.zadd("big", members)
    short = {f"10.0.{i // 256}.{i % 256}-8333": T0 + i % 40 for i in range(1000)}
    client.zadd("short", short)  # ping.py's members: read in one struct format
    for key, added in (("big", members), ("short", short)):
        assert client.object("encoding", key) == b"skiplist"
        payload = client.dump(key)
        assert isinstance(payload, bytes)
        if key == "big":
            assert len(payload) < sum(len(m) + 9 for m in added)  # some were compressed
        pairs = client.zrange(key, 0, -1, withscores=True)
        assert read_zset_dump(payload) == tuple(map(list, zip(*pairs, strict=True)))


def test_plain_members_of_any_length_are_read_in_one_format(
    redis_port: int,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(28)
    base32 = "abcdefghijklmnopqrstuvwxyz234567"
    names = {
        4: lambda i: f"203.0.{i // 256}.{i % 256}-8333",
        1: lambda i: f"2a01:4f8:{i:x}:1f:{rng.randrange(65536):x}::{i % 97:x}-8333",
        0: lambda i: "".join(rng.choice(base32) for _ in range(56)) + f".onion-{8333 + i % 3}",
        2: lambda i: "".join(rng.choice(base32) for _ in range(52)) + ".b32.i2p-0",
        3: lambda i: "".join(rng.choice(base32) for _ in range(300)) + ".onion-8333",
    }
    members = {names[i % 5](i): T0 + rng.randrange(40_000) for i in range(1000)}
    client = redis.Redis(port=redis_port)
    client.zadd("mixed", members)
    payload = client.dump("mixed")
    assert isinstance(payload, bytes)
    assert len(payload) > sum(len(m) + 9 for m in members)  # nothing compressed
    monkeypatch.setattr(rdb_zset, "_each_element", None)  # not read element by element
    pairs = client.zrange("mixed", 0, -1, withscores=True)
    assert read_zset_dump(payload) == tuple(map(list, zip(*pairs, strict=True)))


def test_what_is_not_a_large_sorted_set_is_refused(redis_port: int) -> None:  # noqa: F811
    client = redis.Redis(port=redis_port)
    client.zadd("small", {"10.0.0.1-8333": T0})
    client.set("text", "not a sorted set")
    client.zadd("big", members_of_every_encoding(300))
    client.zadd("short", {f"10.0.0.{i}-8333": T0 + i for i in range(200)})
    big, short = client.dump("big"), client.dump("short")
    assert isinstance(big, bytes)
    assert isinstance(short, bytes)
    # Ten bytes too many before the trailer: a layout other than the one read.
    longer = [payload[:-10] + payload[-20:] for payload in (big, short)]
    for payload in (client.dump("small"), client.dump("text"), big[:-400], *longer, b""):
        assert isinstance(payload, bytes)
        with pytest.raises(NotASkiplist):
            read_zset_dump(payload)


@pytest.mark.parametrize("dump", [True, False])
def test_a_large_block_s_statistics(
    redis_port: int,  # noqa: F811
    dump: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = redis.Redis(port=redis_port)
    times = {f"10.1.{i // 200}.{i % 200 + 1}-8333": T0 + (i * 7919) % 1009 * 7 for i in range(600)}
    times["2001:db8::5-8333"] = T0 + 3
    client.zadd(f"binv:{BLOCK}", {**times, "not an address": T0 - 1})
    skips = Skips(logging.getLogger(__name__))
    stats = BlockStats(client)
    stats.dump = dump  # as with a server that refuses DUMP
    ((_, block),) = stats.read([(f"binv:{BLOCK}".encode(), BLOCK, 602)], skips, 1e18)
    assert block is not None
    ordered = sorted(times.items(), key=lambda item: (item[1], item[0]))
    delays = [ms - ordered[0][1] for _, ms in ordered]
    deciles = statistics.quantiles(delays, n=10, method="inclusive")
    assert (block.first_seen, block.nodes, block.max) == (T0, 601, delays[-1])
    assert block.mean == pytest.approx(statistics.fmean(delays), abs=1e-9)
    assert block.std == pytest.approx(statistics.pstdev(delays), abs=1e-9)
    assert block.p50 == pytest.approx(deciles[4])
    assert block.p90 == pytest.approx(deciles[8])
    assert block.head[:2] == [("10.1.0.1:8333", T0), ("[2001:db8::5]:8333", T0 + 3)]
    assert len(block.head) == 10
    with caplog.at_level(logging.WARNING):
        skips.report()
    assert [r.getMessage() for r in caplog.records] == [
        "malformed members skipped in blocks (1 this pass, 1 not said before), "
        f"e.g. block {BLOCK}: 1, the least b'not an address'"
    ]
