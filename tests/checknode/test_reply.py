"""checknode/reply.py: the live check's answer, as bitnodes.io gave it, with a reason."""

from __future__ import annotations

import msgspec

from crawldash.checknode import wire
from crawldash.checknode.bounds import Checked
from crawldash.checknode.handshake import REASONS, Outcome
from crawldash.checknode.reply import DETAILS, answer_of, not_checkable
from crawldash.checknode.targets import Target

TARGET = Target("8.8.8.8", 8333, "ipv4")
THEIRS = wire.Version(70016, 1033, 0, wire.NetworkAddress(), wire.NetworkAddress(), 1, "/S:27/", 9)


def test_a_success_carries_the_nodes_version():
    checked = Checked(Outcome(None, THEIRS, 12.5), 1_700_000_000.9)
    answer = msgspec.json.decode(msgspec.json.encode(answer_of(TARGET, checked, cached=True)))
    assert answer == {
        "success": True,
        "address": "8.8.8.8",
        "port": 8333,
        "cached": True,
        "checked_at": 1_700_000_000,
        "user_agent": "/S:27/",
        "version": 70016,
        "services": 1033,
        "height": 9,
        "handshake_ms": 12.5,
    }


def test_a_failure_carries_one_reason_and_what_it_can_mean():
    answer = answer_of(TARGET, Checked(Outcome("timeout"), 5.0), cached=False)
    assert (answer.success, answer.reason, answer.detail) == (False, "timeout", DETAILS["timeout"])
    assert answer.user_agent is None
    assert "user_agent" not in msgspec.json.decode(msgspec.json.encode(answer))


def test_every_reason_a_handshake_gives_is_explained():
    assert set(REASONS) | {"not_checkable"} == set(DETAILS)


def test_not_checkable_spells_the_address_in_lower_case():
    answer = not_checkable(f" {'A' * 56}.ONION ", 9, 7.9)
    assert (answer.address, answer.port, answer.checked_at) == (f"{'a' * 56}.onion", 9, 7)
    assert answer.reason == "not_checkable"
    assert not answer.success
