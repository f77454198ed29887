"""live/answers/checks.py: answers about one address, kept until the crawl served or the
presence changes."""

from __future__ import annotations

import json

from crawldash.crawl.files import FileVersion
from crawldash.crawl.reached import Reached
from crawldash.live.answers.checks import CheckAnswers
from crawldash.live.answers.reasons import Evidence
from crawldash.live.snapshot.prepared import PreparedSnapshot

from ...factories import row
from .small import prepared, presence_of

UP, DOWN, GONE = "198.51.100.1:8333", "198.51.100.2:8333", "198.51.100.9:8333"


def answers() -> tuple[CheckAnswers, PreparedSnapshot]:
    served = prepared(200, [row("198.51.100.1", agent="/Satoshi:28.0.0/")])
    return CheckAnswers(presence_of({100: [UP, DOWN], 200: [UP]})), served


def test_a_node_in_the_served_crawl():
    checks, served = answers()
    answer = json.loads(checks.check(served, UP))
    assert (answer["reachable"], answer["snapshot_timestamp"], answer["last_up"]) == (
        True,
        200,
        200,
    )
    assert answer["node"]["user_agent"] == "/Satoshi:28.0.0/"
    assert answer["presence"] == {"crawls": 2, "seen": 2, "first_seen": 100, "last_seen": 200}
    assert answer["reason"]["code"] == "up"


def test_a_node_seen_before_but_not_now():
    checks, served = answers()
    answer = json.loads(checks.check(served, DOWN))
    assert (answer["reachable"], answer["node"], answer["last_up"]) == (False, None, 100)
    assert answer["reason"]["code"] == "unknown"


def test_new_evidence_changes_the_reason():
    checks, served = answers()
    checks.check(served, DOWN)
    checks.set_evidence(Evidence(reached=Reached(200, FileVersion(1, 1), frozenset({DOWN}))))
    answer = json.loads(checks.check(served, DOWN))
    assert answer["reason"] == {**answer["reason"], "code": "reached_not_held", "crawl": 200}


def test_the_v1_status_is_up_with_the_row_or_down():
    checks, served = answers()
    up = json.loads(checks.v1_status(served, UP))
    assert (up["address"], up["port"], up["status"]) == ("198.51.100.1", 8333, "UP")
    assert up["data"][:2] == [70016, "/Satoshi:28.0.0/"]
    down = json.loads(checks.v1_status(served, GONE))
    assert (down["status"], down["data"], down["presence"]["seen"]) == ("DOWN", None, 0)


def test_presence_and_runs_follow_the_presence():
    checks, _ = answers()
    assert json.loads(checks.runs(DOWN, 5)) == [
        {"from": 100, "to": 100, "present": True, "crawls": 1},
        {"from": 200, "to": 200, "present": False, "crawls": 1},
    ]
    assert json.loads(checks.presence_body(DOWN))["last_seen"] == 100
    checks.presence.add(300, [DOWN])
    assert json.loads(checks.presence_body(DOWN))["last_seen"] == 300
