"""The memory of hosts spelled (``crawl/spellings.py``), shared by counts in threads."""

from __future__ import annotations

import pytest

from crawldash.crawl import spellings
from crawldash.crawl.address import NETWORKS, network_of


def test_a_host_is_found_only_once_its_network_is_known(monkeypatch: pytest.MonkeyPatch):
    # Counts in two threads share one memory: one that finds a host another is spelling
    # looks up the address's network next, so the network must be known first.
    memory = spellings.Spellings()
    host, port = "2600:1f18:d26d:e7a:7a11:419b:f63:e0a", 8333
    seen_while_spelling = []

    def watched(of: str) -> str:  # as crawl.address.network_of, which it stands in for
        seen_while_spelling.append(memory.by_port.get(port, {}).get(host))
        return network_of(of)

    monkeypatch.setattr(spellings, "network_of", watched)
    address = memory.address(host, port)
    assert seen_while_spelling == [None]
    assert memory.addresses([_Row(host, port)]) == [address]
    assert NETWORKS[memory.networks[address]] == "ipv6"


class _Row:
    def __init__(self, address: str, port: int) -> None:
        self.address, self.port = address, port
