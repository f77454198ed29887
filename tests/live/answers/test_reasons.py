"""live/answers/reasons.py: why a node is or is not in the newest export, from the
evidence of the crawl paired with it, strongest first."""

from __future__ import annotations

import pytest

from crawldash.crawl.attempts import CrawlAttempts, Rules
from crawldash.crawl.files import FileVersion
from crawldash.crawl.reached import Reached
from crawldash.live.answers.reasons import Evidence, reason_for

ADDRESS = "198.51.100.7:8333"


def reached(*addresses: str, timestamp: int = 100) -> Reached:
    return Reached(timestamp, FileVersion(1, 1), frozenset(addresses))


def attempts(
    tried: tuple[str, ...] = (),
    reached_now: tuple[str, ...] = (),
    *,
    complete: bool = True,
    rules: Rules | None = None,
    timestamp: int = 100,
) -> CrawlAttempts:
    return CrawlAttempts(
        timestamp, complete, frozenset(tried), frozenset(reached_now), rules or Rules()
    )


def test_an_exported_node_is_up_in_that_export():
    reason = reason_for(ADDRESS, 200, Evidence())
    assert (reason.code, reason.crawl) == ("up", 200)


@pytest.mark.parametrize(
    ("evidence", "code"),
    [
        (Evidence(), "unknown"),
        (Evidence(reached=reached(ADDRESS)), "reached_not_held"),
        (Evidence(attempts=attempts(reached_now=(ADDRESS,))), "reached_not_held"),
        (Evidence(reached=reached()), "unknown"),  # no record of who was tried
        (Evidence(attempts=attempts(tried=(ADDRESS,))), "failed"),
        (Evidence(attempts=attempts(rules=Rules(exclude_nodes=["198.51.100.7"]))), "excluded"),
        (Evidence(attempts=attempts()), "not_tried"),
        (Evidence(attempts=attempts(complete=False)), "unknown"),  # watched in part
        (Evidence(attempts=attempts(rules=Rules(include_asns=[1]))), "unknown"),
        (Evidence(reached(), attempts(tried=(ADDRESS,), timestamp=50)), "unknown"),
    ],
    ids=[
        "nothing",
        "reached",
        "reached-by-the-bridge",
        "crawl-file-alone",
        "tried",
        "excluded",
        "not-tried",
        "incomplete",
        "only-some-asns",
        "another-crawls-attempts",
    ],
)
def test_the_strongest_evidence_gives_the_reason(evidence: Evidence, code: str):
    reason = reason_for(ADDRESS, None, evidence)
    assert reason.code == code
    assert reason.crawl == evidence.crawl


def test_a_failure_names_the_port_to_check_and_an_exclusion_its_rule():
    failed = reason_for(
        "[2001:db8::1]:18333", None, Evidence(attempts=attempts(("[2001:db8::1]:18333",)))
    )
    assert "port 18333" in failed.detail
    rules = Rules(exclude_ipv4_networks=[(0xC6336400, 0xFFFFFF00)])  # 198.51.100.0/24
    excluded = reason_for(ADDRESS, None, Evidence(attempts=attempts(rules=rules)))
    assert "(198.51.100.0/24)" in excluded.detail


def test_the_paired_crawl_is_the_crawl_files_else_the_bridges():
    assert Evidence().crawl is None
    assert Evidence(attempts=attempts(timestamp=90)).crawl == 90
    both = Evidence(reached(timestamp=100), attempts(timestamp=90))
    assert both.crawl == 100
    assert both.attempts_of_the_crawl() is None
