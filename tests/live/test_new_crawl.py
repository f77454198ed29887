"""live/loader/new_crawl.py: what the loader process keeps of a crawl for the next load."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawldash.crawl.decode import Rules
from crawldash.live.loader import new_crawl

from ..factories import api_body, export_body, row, write_snapshot

RULES = Rules(10**7)


def test_the_loader_remembers_the_hosts_of_the_last_crawl_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(new_crawl, "_learned", None)
    first = export_body([row("198.51.100.1"), row("198.51.100.2")])
    second = export_body([row("198.51.100.2"), row("2001:DB8::1", port=18333)])
    new_crawl.learn_hosts(write_snapshot(tmp_path, 1_000, first), RULES)
    new_crawl.learn_hosts(write_snapshot(tmp_path, 2_000, second), RULES)
    learned = new_crawl._learned
    assert learned is not None
    assert learned.by_port == {
        8333: {"198.51.100.2": "198.51.100.2:8333"},
        18333: {"2001:DB8::1": "[2001:db8::1]:18333"},
    }
    # A crawl in the API form has no rows to learn from: the last crawl's hosts stay.
    node = row("unused")[2:]
    new_crawl.learn_hosts(write_snapshot(tmp_path, 3_000, api_body(3_000, {"x": node})), RULES)
    assert new_crawl._learned is learned
