"""live/answers/kept.py: answers kept within a budget of bytes until the history changes
(each entry's answer, the text of its key and its own bytes), and made in steps."""

from __future__ import annotations

import gzip

import brotli
import pytest

from crawldash.live.answers.kept import (
    COMPRESS_STEP,
    ENTRY_BYTES,
    KeptAnswers,
    Steps,
    at_once,
    encoded_steps,
)
from crawldash.live.bodies import represent

ROOMY = 100 * ENTRY_BYTES


def cost(key: str, answer: bytes) -> int:
    return len(answer) + len(key) + ENTRY_BYTES


def test_answers_of_another_change_count_are_dropped():
    kept = KeptAnswers[bytes](ROOMY, len)
    kept.put("a", 1, b"xx")
    assert kept.get("a", 1) == b"xx"
    assert kept.get("a", 2) is None
    assert (len(kept), kept.bytes) == (0, 0)


def test_the_least_recently_asked_for_go_first_past_the_budget():
    kept = KeptAnswers[bytes](2 * cost("a", b"1234"), len)
    kept.put("a", 1, b"1234")
    kept.put("b", 1, b"1234")
    assert kept.get("a", 1) == b"1234"  # now the most recent
    kept.put("c", 1, b"1234")
    assert (kept.get("b", 1), kept.get("a", 1), kept.get("c", 1)) == (None, b"1234", b"1234")
    assert kept.bytes == 2 * cost("a", b"1234")


def test_an_answer_made_before_the_history_changed_is_not_kept():
    kept = KeptAnswers[bytes](ROOMY, len)
    kept.get("a", 5)
    kept.put("a", 4, b"old")
    assert kept.get("a", 5) is None


def test_replacing_an_answer_counts_its_bytes_once():
    kept = KeptAnswers[bytes](ROOMY, len)
    kept.put("a", 1, b"12345")
    kept.put("a", 1, b"12")
    assert kept.bytes == cost("a", b"12")


def test_the_text_of_a_key_counts_and_an_empty_answer_is_not_free():
    kept = KeptAnswers[bytes](10 * cost("q=00", b""), len)
    padded = ("q=" + "x" * 2000, "gzip, br")  # a raw query string and an Accept-Encoding
    kept.put(padded, 1, b"")
    assert kept.bytes == 2002 + 8 + ENTRY_BYTES
    for n in range(100):
        kept.put((f"q={n:02d}", None), 1, b"")
    assert len(kept) == 10  # the budget bounds entries of no bytes too
    assert kept.get(padded, 1) is None  # the least recently asked for went first


def steps() -> Steps[int]:
    yield
    yield
    return 7


def test_at_once_runs_every_step():
    assert at_once(steps()) == 7


@pytest.mark.parametrize("coding", ["gzip", "br"])
def test_encoded_steps_compress_in_steps(coding: str):
    identity = represent(bytes(range(256)) * (COMPRESS_STEP // 128), 1_700_000_000)
    made = encoded_steps(identity, coding)
    yields = 0
    try:
        while True:
            next(made)
            yields += 1
    except StopIteration as done:
        answer = done.value
    assert yields == 1  # two steps of COMPRESS_STEP bytes
    body = gzip.decompress(answer.body) if coding == "gzip" else brotli.decompress(answer.body)
    assert body == identity.body
    assert answer.etag == identity.etag[:-1] + f'-{coding}"'
    assert (answer.encoding, answer.modified) == (coding, 1_700_000_000)
