"""Reading blocks from a real redis-server: a deadline that leaves keys for the next pass
and leaves no connection behind, a server that refuses ``DUMP``, and members that are not
addresses, in the first block or in a later one."""

from __future__ import annotations

import logging
import statistics
from time import monotonic

import pytest
import redis

from crawldash.bridge import redis_values
from crawldash.bridge.block_stats import KEYS_PER_ROUND, BlockStats
from crawldash.bridge.redis_values import Skips

from .process import wait_until
from .test_bridge import REDIS, redis_port  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(REDIS is None, reason="redis-server (Debian redis-server) missing"),
]

T0 = 1_790_000_000_000
log = logging.getLogger(__name__)
NODES = [f"10.2.{i // 250}.{i % 250 + 1}-8333" for i in range(300)]  # a skiplist: > 128


def block_hash(number: int) -> str:
    return f"{number:064x}"


def fill(client: redis.Redis, blocks: int) -> list[tuple[bytes, str, int]]:
    """``blocks`` keys as ping.py writes them; the (key, hash, count) BlockStats reads."""
    keys = []
    for number in range(blocks):
        key = f"binv:{block_hash(number)}"
        client.zadd(key, {node: T0 + number * 600_000 + i * 13 for i, node in enumerate(NODES)})
        keys.append((key.encode(), block_hash(number), len(NODES)))
    return keys


def clients(client: redis.Redis) -> set[str]:
    return {entry["id"] for entry in client.client_list()}


def no_connection_but(client: redis.Redis, before: set[str]) -> None:
    """No client connected since ``before`` is left: Redis sees a closed connection go on
    its next turn, so wait for it."""
    wait_until(lambda: clients(client) <= before)


def test_a_deadline_leaves_the_rest_unread_and_no_connection_behind(
    redis_port: int,  # noqa: F811
) -> None:
    client = redis.Redis(port=redis_port)
    keys = fill(client, KEYS_PER_ROUND * 3)
    before = clients(client)
    stats = BlockStats(client)
    past = monotonic() - 1  # the first round is read all the same: a pass always progresses
    first = [key for key, _ in stats.read(keys, Skips(log), past)]
    assert first == [key for key, _, _ in keys[:KEYS_PER_ROUND]]
    no_connection_but(client, before)
    reader = stats.read(keys[KEYS_PER_ROUND:], Skips(log), monotonic() + 60)
    next(reader)
    reader.close()  # a caller that stops early: the round sent ahead is not left unread
    no_connection_but(client, before)
    rest = dict(stats.read(keys[KEYS_PER_ROUND:], Skips(log), monotonic() + 60))
    assert len(rest) == 2 * KEYS_PER_ROUND
    for number, (key, found) in enumerate(rest.items(), start=KEYS_PER_ROUND):
        assert key == f"binv:{block_hash(number)}".encode()
        assert found is not None
        assert (found.first_seen, found.nodes, found.max) == (T0 + number * 600_000, 300, 299 * 13)
    no_connection_but(client, before)


def test_a_server_that_refuses_dump_is_read_with_zrange(
    redis_port: int,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    admin = redis.Redis(port=redis_port)
    keys = fill(admin, KEYS_PER_ROUND + 2)
    admin.acl_setuser(
        "bridge", enabled=True, passwords=["+secret"], keys=["*"], commands=["+@all", "-dump"]
    )
    client = redis.Redis(port=redis_port, username="bridge", password="secret")
    stats = BlockStats(client)
    with caplog.at_level(logging.WARNING):
        found = dict(stats.read(keys, Skips(log), monotonic() + 60))
    assert stats.dump is False
    refused = [r.getMessage() for r in caplog.records if "refuses DUMP" in r.getMessage()]
    assert len(refused) == 1, refused
    delays = [i * 13 for i in range(300)]
    for number, block in enumerate(found.values()):
        assert block is not None
        assert block.first_seen == T0 + number * 600_000
        assert block.mean == pytest.approx(statistics.fmean(delays), abs=1e-9)
        assert block.std == pytest.approx(statistics.pstdev(delays), abs=1e-9)


def test_members_that_are_not_addresses_are_skipped_in_any_block(
    redis_port: int,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = redis.Redis(port=redis_port)
    keys = fill(client, 3)
    # Shaped like ADDRESS-PORT, yet no address: a bad host, a port out of range. The second
    # block brings them after the first has made every other member known; the third
    # brings them again.
    for number in (1, 2):
        first = T0 + number * 600_000
        bad = {"not.an.address-8333": first - 5, "10.0.0.1-70000": first + 1}
        client.zadd(keys[number][0], bad)
    stats = BlockStats(client)
    with caplog.at_level(logging.WARNING):
        skips = Skips(log)
        found = dict(stats.read(keys, skips, 1e18))
        skips.report()
        dict(stats.read(keys, skips, 1e18))  # a second pass: nothing new to say
        skips.report()
    delays = [i * 13 for i in range(300)]
    for number in (0, 1, 2):
        block = found[keys[number][0]]
        assert block is not None
        first = T0 + number * 600_000
        assert (block.first_seen, block.nodes, block.max) == (first, 300, delays[-1])
        assert block.mean == pytest.approx(statistics.fmean(delays), abs=1e-9)
        assert block.head[0] == ("10.2.0.1:8333", first)
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "malformed members skipped in blocks (2 this pass, 2 not said before), "
        f"e.g. block {block_hash(1)}: 2, the least b'10.0.0.1-70000'"
    ]


def test_what_is_said_is_remembered_up_to_a_bound(caplog: pytest.LogCaptureFixture) -> None:
    skips = Skips(log)
    with caplog.at_level(logging.WARNING):
        for value in range(redis_values.MAX_REMEMBERED * 3):
            skips.skip("a cause", value)
        skips.skip("another cause", "x" * 10_000)
        skips.report()
        assert len(skips._said) == redis_values.MAX_REMEMBERED  # the newest
        skips.skip("a cause", redis_values.MAX_REMEMBERED * 3 - 1)  # remembered: not said
        skips.report()
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        f"a cause ({redis_values.MAX_REMEMBERED * 3} this pass, "
        f"{redis_values.MAX_REMEMBERED * 3} not said before), e.g. 0",
        "another cause (1 this pass, 1 not said before), e.g. '" + "x" * 199,  # cut
    ]
