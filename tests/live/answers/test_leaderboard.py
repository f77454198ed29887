"""live/answers/leaderboard.py: a crawl's reachable IPv4/IPv6 nodes ranked by PIX, built
from a small crawl and presence made in the test (no server)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from crawldash.live.answers.leaderboard import Leaderboard, port_of
from crawldash.live.answers.propagation import Propagation
from crawldash.live.snapshot.prepared import PreparedSnapshot
from crawldash.live.stores.presence import Presence

from ...factories import ONION, row
from .small import prepared, presence_of


@dataclass
class Served:
    snapshot: PreparedSnapshot | None
    presence: Presence
    listeners: list[Callable[[str], None]] = field(default_factory=list)


def crawl() -> PreparedSnapshot:
    odd_port = row("198.51.100.2", 18333, agent="/Knots:1/")
    behind = row("2001:db8::1", height=450_000)
    return prepared(300, [row("198.51.100.1"), odd_port, behind, row(ONION, tor=True)])


def test_port_of_an_address():
    assert port_of("[2001:db8::1]:18333") == 18333


async def test_no_crawl_served_has_no_board():
    board = Leaderboard(Served(None, Presence()), Propagation(None))
    assert await board.current() is None


async def test_nodes_are_ranked_by_pix_onions_left_out():
    presence = presence_of({100: ["198.51.100.1:8333"], 200: [], 300: ["198.51.100.1:8333"]})
    leaderboard = Leaderboard(Served(crawl(), presence), Propagation(None))
    board = await leaderboard.current()
    assert board is not None
    assert board.timestamp == 300
    rows = [json.loads(body) for body in board.rows]
    assert [r["node"] for r in rows] == [
        "198.51.100.1:8333",  # up in 2 of the 3 crawls held
        "[2001:db8::1]:8333",  # half the consensus height: HI 0.5
        "198.51.100.2:18333",  # not on the usual port: PI 0.0
    ]
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert rows[0]["dui"] == "0.6667"
    assert rows[2]["pi"] == "0.0000"
    assert rows[1]["hi"] == "0.5000"
    assert rows[2]["user_agent"] == "/Knots:1/"
    assert board.row_of(f"{ONION}:8333") is None
    assert board.matching("knots") == [2]
    assert board.matching(None) == [0, 1, 2]
    assert await leaderboard.current() is board
    assert leaderboard.builds == 1


async def test_a_crawl_announced_is_built_only_once_the_board_was_asked_for():
    served = Served(crawl(), presence_of({300: ["198.51.100.1:8333"]}))
    leaderboard = Leaderboard(served, Propagation(None))
    for tell in served.listeners:
        tell("snapshot")
    assert leaderboard._task is None  # no one reads it: no build begun
    board = await leaderboard.current()
    assert board is not None
    assert leaderboard.builds == 1
    served.snapshot = prepared(900, [row("198.51.100.1"), row("198.51.100.3")])
    for tell in served.listeners:
        tell("snapshot")
    task = leaderboard._task
    assert task is not None  # asked for before: the new crawl's board is begun at once
    await task
    assert leaderboard.builds == 2
    assert leaderboard.board is not None
    assert leaderboard.board.timestamp == 900
