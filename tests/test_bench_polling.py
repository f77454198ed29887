"""bench/polling.py: how far apart the endpoints' switches to a crawl were, from what the
asking saw."""

from __future__ import annotations

import pytest

from bench.polling import Switches


def test_the_gap_is_the_spread_of_first_answers_and_the_proven_gap_what_older_ones_show():
    # a named the crawl 0.200 s after the write; b at 0.210 s, though still asked about an
    # older crawl at 0.195 s: the switch of b may have come before a's, no gap is proven.
    together = Switches({"a": 0.200, "b": 0.210}, ("a", "b"), {"a": 0.190, "b": 0.195})
    assert together.gap == pytest.approx(0.010)
    assert together.proven_gap == 0.0
    # b still answered about an older crawl when asked 0.030 s after a had named the new one
    apart = Switches({"a": 0.200, "b": 0.240}, ("a", "b"), {"a": 0.190, "b": 0.230})
    assert apart.proven_gap == pytest.approx(0.030)
    never = Switches({"a": 0.200, "b": None}, ("a", "b"), {"a": 0.190, "b": 5.0})
    assert never.gap is None
    assert never.proven_gap is None
