"""The bridge's record of each crawl's attempts, against a real redis-server driven the way
bitnodes' crawl.py drives it: rules set, ``node:*`` keys set before each attempt, reached
nodes added to ``up``, ``pending`` emptied, ``elapsed`` pushed as the crawl ends, and the
keys deleted as the next one starts."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest
import redis

from crawldash.bridge.attempts import AttemptsCollector
from crawldash.crawl.attempts import crawl_attempts, read_kept

from .test_bridge import redis_port  # noqa: F401  (a fixture: a redis-server of its own)

pytestmark = pytest.mark.slow

FIRST_END, CRAWL_END = 1_700_000_000, 1_700_000_600
TEN = (int("0a000000", 16), int("ff000000", 16))  # 10.0.0.0/8 as bitnodes keeps it


def end_crawl(client: redis.Redis, when: int) -> None:
    """As crawl.py's cron: push elapsed, then delete the crawl's keys (restart())."""
    client.lpush("elapsed", json.dumps([when, 600]))
    client.set("crawl:master:state", "starting")
    for key in client.scan_iter(match="node:*"):
        client.delete(key)
    client.delete("up")


def crawl(client: redis.Redis, tried: list[str], reached: list[str]) -> None:
    """A crawl under way: each attempt's key, the reached ones in ``up``."""
    client.set("crawl:master:state", "running")
    client.set("exclude-ipv4-networks", json.dumps([TEN]))
    client.set("exclude-nodes", json.dumps(["198.51.100.7"]))
    for member in tried:
        client.set(f"node:{member}-1033", "")
    for member in reached:
        client.sadd("up", f"node:{member}-1033")


def watched_from_its_start(port: int, folder: Path) -> tuple[redis.Redis, AttemptsCollector]:
    """A bridge's collector that saw the crawl before end (``FIRST_END``), as the next
    one is about to start: it watches that one from its start."""
    client = redis.Redis(port=port)
    collector = AttemptsCollector(client, folder, max_age_days=60)
    client.set("crawl:master:state", "starting")
    client.lpush("elapsed", json.dumps([FIRST_END, 600]))
    collector.collect(0.0)
    return client, collector


def test_a_watched_crawl_is_kept_complete_with_its_attempts(redis_port: int, tmp_path: Path):  # noqa: F811
    client = redis.Redis(port=redis_port)
    collector = AttemptsCollector(client, tmp_path, max_age_days=60)
    client.set("crawl:master:state", "starting")  # between two crawls, as the bridge starts
    client.lpush("elapsed", json.dumps([FIRST_END, 600]))
    collector.collect(0.0)  # the next crawl has not started: it is watched from its start
    crawl(client, ["203.0.113.3-8333", "2001:db8::5-8333"], [])
    client.sadd("pending", json.dumps(["203.0.113.4", 8333, 1033]))
    collector.collect(1.0)  # pending not empty: an early scan
    crawl(client, ["203.0.113.1-8333", "203.0.113.2-8333"], ["203.0.113.1-8333"])
    client.delete("pending")
    collector.collect(2.0)  # pending empty: the final scan
    end_crawl(client, CRAWL_END)
    collector.collect(3.0)
    kept = read_kept(tmp_path)
    assert kept is not None
    attempts = crawl_attempts(kept, CRAWL_END + 90)
    assert attempts is not None
    assert attempts.timestamp == CRAWL_END
    assert attempts.complete is True
    assert attempts.tried == {
        "203.0.113.1:8333",
        "203.0.113.2:8333",
        "203.0.113.3:8333",
        "[2001:db8::5]:8333",
    }
    assert attempts.reached == {"203.0.113.1:8333"}
    assert attempts.excluded_by("10.9.8.7:8333") == "10.0.0.0/8"
    assert attempts.excluded_by("198.51.100.7:8333") == "exclude-nodes"
    assert attempts.excluded_by("203.0.113.9:8333") is None


def test_a_crawl_joined_midway_or_without_a_final_scan_is_not_complete(
    redis_port: int,  # noqa: F811
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
):
    caplog.set_level("INFO", logger="crawldash.bridge.attempts")
    client = redis.Redis(port=redis_port)
    collector = AttemptsCollector(client, tmp_path, max_age_days=60)
    crawl(client, ["203.0.113.3-8333"], [])
    client.lpush("elapsed", json.dumps([FIRST_END, 600]))
    collector.collect(0.0)  # started mid-crawl: it never saw this crawl's start
    client.delete("pending")
    collector.collect(1.0)
    end_crawl(client, CRAWL_END)
    collector.collect(2.0)  # kept, from a final scan, but not watched whole
    crawl(client, ["203.0.113.5-8333"], [])
    client.sadd("pending", json.dumps(["203.0.113.6", 8333, 1033]))
    collector.collect(3.0)
    end_crawl(client, CRAWL_END + 600)  # ended before pending was ever seen empty
    collector.collect(4.0)
    kept = read_kept(tmp_path)
    assert kept is not None
    first, second = (crawl_attempts(kept, t) for t in (CRAWL_END, CRAWL_END + 600))
    assert first is not None
    assert second is not None
    assert (first.complete, second.complete) == (False, False)
    assert first.tried == {"203.0.113.3:8333"}
    assert second.tried == {"203.0.113.5:8333"}  # the early scan's, kept all the same
    followed = [r.getMessage() for r in caplog.records if "following" in r.getMessage()]
    assert followed == [
        f"following the crawl after {FIRST_END}: joined under way, to be kept as incomplete",
        f"following the crawl after {CRAWL_END}: from its start",
        f"following the crawl after {CRAWL_END + 600}: from its start",
    ]


def test_many_crawls_are_kept_as_differences_and_read_back_exactly(
    redis_port: int,  # noqa: F811
    tmp_path: Path,
):
    """Past a day of crawls, most are kept as the difference from the one before; each reads
    back as it was, and crawls older than the age kept are dropped."""
    client = redis.Redis(port=redis_port)
    collector = AttemptsCollector(client, tmp_path, max_age_days=1)
    client.set("crawl:master:state", "starting")
    client.lpush("elapsed", json.dumps([FIRST_END, 600]))
    collector.collect(0.0)
    expected: dict[int, set[str]] = {}
    for n in range(1, 200):  # a day and a third of 10-minute crawls
        tried = [f"203.0.{(n + i) % 256}.{i}-8333" for i in range(20)]
        crawl(client, tried, tried[:3])
        client.delete("pending")
        collector.collect(float(2 * n))
        end = FIRST_END + 600 * n
        end_crawl(client, end)
        collector.collect(float(2 * n + 1))
        expected[end] = {f"203.0.{(n + i) % 256}.{i}:8333" for i in range(20)}
    kept = read_kept(tmp_path)
    assert kept is not None
    assert [c.timestamp for c in kept.crawls] == sorted(t for t in expected if t >= end - 86_400)
    assert kept.crawls[0].whole
    assert sum(c.whole for c in kept.crawls) < len(kept.crawls) / 10
    for timestamp in (kept.crawls[0].timestamp, kept.crawls[100].timestamp, end):
        attempts = crawl_attempts(kept, timestamp)
        assert attempts is not None
        assert attempts.timestamp == timestamp
        assert attempts.tried == expected[timestamp]
        assert attempts.complete


def test_a_rule_or_elapsed_not_of_bitnodes_shape_is_said_once_and_never_stops_it(
    redis_port: int,  # noqa: F811
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
):
    client, collector = watched_from_its_start(redis_port, tmp_path)
    crawl(client, ["203.0.113.3-8333"], [])
    client.set("exclude-ipv4-networks", "[" * 100_000)  # nested past any decoder's depth
    client.set("include-asns", '["AS1"]')
    client.delete("pending")
    for tick in range(3):
        collector.collect(1.0 + tick)
    client.rpush("elapsed", "[Infinity, 5]")  # an older entry: never read
    end_crawl(client, CRAWL_END)
    client.lpush("elapsed", "[Infinity, 5]")  # the newest, unreadable: no crawl told apart
    collector.collect(5.0)
    collector.collect(6.0)
    kept = read_kept(tmp_path)
    assert kept is None  # the crawl's end was never readable: nothing kept, nothing wrong
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert sum("exclude-ipv4-networks" in line for line in said) == 1, said
    assert sum("include-asns" in line for line in said) == 1, said
    assert sum("elapsed entry" in line for line in said) == 1, said


# bitnodes' own default (exclude_ipv6_networks in its crawl.conf.default), set in Redis as its
# crawl.py sets every network rule: (int(network_address), int(netmask)) in a JSON list.
BITNODES_IPV6 = [
    "::ffff:0:0/96",
    "2001:1::1/128",
    "2001:1::2/128",
    "2001:3::/32",
    "2001:4:112::/48",
    "2001:20::/27",
    "2620:4f:8000::/48",
    "3fff::/20",
]


def as_bitnodes_sets(networks: list[str]) -> str:
    ranges = map(ipaddress.ip_network, networks)
    return json.dumps([(int(n.network_address), int(n.netmask)) for n in ranges])


def test_bitnodes_default_ipv6_rules_are_kept_and_named(
    redis_port: int,  # noqa: F811
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
):
    client, collector = watched_from_its_start(redis_port, tmp_path)
    crawl(client, ["2001:db8::5-8333"], [])
    client.set("exclude-ipv6-networks", as_bitnodes_sets(BITNODES_IPV6))
    client.delete("pending")
    collector.collect(1.0)
    end_crawl(client, CRAWL_END)
    collector.collect(2.0)
    kept = read_kept(tmp_path)
    assert kept is not None  # written: a netmask of 128 bits fits the file
    attempts = crawl_attempts(kept, CRAWL_END)
    assert attempts is not None
    for network in BITNODES_IPV6:
        inside = ipaddress.ip_network(network)[-1]
        assert attempts.excluded_by(f"[{inside}]:8333") == network
    assert attempts.excluded_by("[2001:db8::5]:8333") is None
    assert attempts.excluded_by("[2001:4::1]:8333") is None  # beside 2001:4:112::/48
    assert not [r for r in caplog.records if r.levelname in ("WARNING", "ERROR")]


def test_entries_that_are_no_range_or_asn_are_skipped_and_said_once(
    redis_port: int,  # noqa: F811
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
):
    client, collector = watched_from_its_start(redis_port, tmp_path)
    crawl(client, ["203.0.113.3-8333"], [])
    client.set(  # TEN, then past 64 bits, a mask with a hole, a network outside its mask
        "exclude-ipv4-networks",
        json.dumps([TEN, [1 << 70, 1 << 80], [0x0A000000, 0xFF00FF00], [0x0A000001, 0xFF000000]]),
    )
    client.set("exclude-ipv6-networks", json.dumps([[1 << 130, (1 << 128) - 1], [-1, 0]]))
    client.set("include-asns", json.dumps([3320, 1 << 70, -5]))
    client.delete("pending")
    for tick in range(3):
        collector.collect(1.0 + tick)
    end_crawl(client, CRAWL_END)
    collector.collect(5.0)
    kept = read_kept(tmp_path)
    assert kept is not None  # what could not be kept cost its entries, not the crawl
    attempts = crawl_attempts(kept, CRAWL_END)
    assert attempts is not None
    assert attempts.rules.exclude_ipv4_networks == [TEN]
    assert attempts.rules.exclude_ipv6_networks == []
    assert attempts.rules.include_asns == [3320]
    assert attempts.excluded_by("10.9.8.7:8333") == "10.0.0.0/8"
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    for key in ("exclude-ipv4-networks", "exclude-ipv6-networks", "include-asns"):
        assert sum(key in line for line in said) == 1, said
