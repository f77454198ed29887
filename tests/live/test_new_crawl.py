"""live/loader/new_crawl.py: what the loader process keeps of a crawl for the next load."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawldash.crawl.decode import Rules
from crawldash.crawl.spellings import Spellings
from crawldash.live.loader import new_crawl

from ..factories import api_body, export_body, row, write_snapshot

RULES = Rules(10**7)


def test_the_loader_remembers_the_hosts_of_each_folders_last_crawl_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(new_crawl, "_learned", {})
    first = export_body([row("198.51.100.1"), row("198.51.100.2")])
    second = export_body([row("198.51.100.2"), row("2001:DB8::1", port=18333)])
    new_crawl.learn_hosts(write_snapshot(tmp_path, 1_000, first), RULES)
    new_crawl.learn_hosts(write_snapshot(tmp_path, 2_000, second), RULES)
    learned = new_crawl._learned[tmp_path]
    assert learned.by_port == {
        8333: {"198.51.100.2": "198.51.100.2:8333"},
        18333: {"2001:DB8::1": "[2001:db8::1]:18333"},
    }
    # A crawl in the API form has no rows to learn from: the last crawl's hosts stay.
    node = row("unused")[2:]
    new_crawl.learn_hosts(write_snapshot(tmp_path, 3_000, api_body(3_000, {"x": node})), RULES)
    assert new_crawl._learned[tmp_path] is learned


def test_a_crawl_is_spelled_from_the_last_crawl_of_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """One loader serves every network: a crawl of one folder is spelled from that folder's
    last crawl, not from another network's that was loaded in between."""
    monkeypatch.setattr(new_crawl, "_learned", {})
    main, test = tmp_path / "main", tmp_path / "testnet"
    main.mkdir()
    test.mkdir()
    hosts = [f"198.51.100.{i}" for i in range(1, 41)]
    new_crawl.learn_hosts(write_snapshot(main, 1_000, export_body(list(map(row, hosts)))), RULES)
    others = [row(f"203.0.113.{i}", port=48333) for i in range(1, 41)]
    new_crawl.learn_hosts(write_snapshot(test, 1_000, export_body(others)), RULES)
    spelled: list[str] = []
    one_by_one = Spellings.address

    def noted(self: Spellings, host: str, port: int) -> str:  # a host the memory lacks
        spelled.append(host)
        return one_by_one(self, host, port)

    monkeypatch.setattr(Spellings, "address", noted)
    newcomer = "198.51.100.99"
    path = write_snapshot(main, 1_600, export_body([row(h) for h in [*hosts, newcomer]]))
    snapshot, _ = new_crawl.read_new_crawl(path, RULES)
    assert spelled == [newcomer]
    assert len(snapshot.nodes) == len(hosts) + 1
