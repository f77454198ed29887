"""A block's propagation statistics from its announcements: the delays after the earliest,
their mean, standard deviation and percentiles, its first announcers and its curve, as
bitnodes.io's API v1 gives them (``crawl/propagation.py`` keeps them). The bridge makes
them from bitnodes' Redis, the demo from announcements of its own."""

from __future__ import annotations

import math

from .propagation import CURVE_STEPS, HEAD_SIZE, Block, bitnodes_member


def from_announcements(block_hash: str, members: list[bytes], scores: list[float]) -> Block:
    """The statistics of one block's announcements (earliest first, at least one): delays
    in ms after the earliest, their mean and population standard deviation, percentiles by
    linear interpolation between the two nearest ranks (at 50%, 90% and every 5% for the
    curve), and the first ``HEAD_SIZE``.

    Args:
        block_hash: the block's hash, lower case.
        members: the announcing nodes as ping.py writes them, each an address, earliest
            first.
        scores: their ms since the epoch, ascending.

    Returns:
        The block as kept.
    """
    first = scores[0]
    delays = [score - first for score in scores]
    count = len(delays)
    mean = math.fsum(delays) / count
    std = math.dist(delays, [mean] * count) / math.sqrt(count)
    head = [
        (bitnodes_member(member.decode()), round(score))
        for member, score in zip(members[:HEAD_SIZE], scores, strict=False)
    ]
    return Block(
        block_hash,
        round(first),
        count,
        delays[-1],
        mean,
        std,
        _at(delays, 0.5),
        _at(delays, 0.9),
        head,
        [round(_at(delays, step / CURVE_STEPS)) for step in range(CURVE_STEPS + 1)],
    )


def _at(ascending: list[float], share: float) -> float:
    """The ``share`` percentile, linearly interpolated between the two nearest ranks."""
    position = share * (len(ascending) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ascending) - 1)
    return ascending[low] + (ascending[high] - ascending[low]) * (position - low)
