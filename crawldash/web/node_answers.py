"""``/api/nodes`` answers kept for the crawl served, so that a query asked again (a public
instance meets the same few over and over: a country's nodes, those with a service, a
CSV export) is answered from bytes instead of a search over every node.

Two kinds are kept, in one budget of bytes (their keys counted too: ``KeptAnswers``), the
least recently asked for given up first: the positions a filter matched, keyed by the
parsed (normalised) filter and order, which every page and format of the same filter
shares; and each answer as sent, keyed by its raw query string and the base its links are
made from, as a ``BodyFile``: a large one (a CSV export) is sent from its memory file,
which is counted in the budget beside its bytes and closed when the answer is given up.
All are dropped when another crawl is served. An answer made for a crawl replaced
meanwhile is not kept.
"""

from __future__ import annotations

from collections.abc import Hashable

from ..live.answers.kept import KeptAnswers
from ..live.bodies import SENDFILE_MIN, BodyFile
from ..live.snapshot.prepared import PreparedSnapshot

# A CSV of every node of a 15,000-node crawl is ~2.5 MB, twice that with its memory file.
MAX_BYTES = 16 * 1024 * 1024
LARGEST_SHARE = 2  # an answer over half the budget is made each time, not kept

Kept = BodyFile | memoryview


class NodeAnswers:
    """Answers and matched positions of the crawl served, within ``max_bytes``."""

    def __init__(self, max_bytes: int | None = None) -> None:
        budget = MAX_BYTES if max_bytes is None else max_bytes
        self._kept: KeptAnswers[Kept] = KeptAnswers(budget, _size, _given_up)
        self._served: PreparedSnapshot | None = None
        self._generation = 0  # counts the crawls served, for KeptAnswers' change count

    @property
    def bytes(self) -> int:
        return self._kept.bytes

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, served: PreparedSnapshot, ask: Hashable) -> Kept | None:
        """What was kept for ``ask`` of the crawl ``served``, if anything.

        Args:
            served: the crawl being answered from (the one the state serves now).
            ask: a filter's or an answer's key.

        Returns:
            The answer kept (or positions, as a memoryview of unsigned ints); None if none.
        """
        return self._kept.get(ask, self._follow(served))

    def put(self, served: PreparedSnapshot, ask: Hashable, answer: Kept) -> bool:
        """Keep ``answer``, made from ``served``, unless another crawl has been asked about
        since or it is over a LARGEST_SHARE of the budget.

        Returns:
            Whether it was kept.
        """
        if served is not self._served or _size(answer) * LARGEST_SHARE > self._kept.max_bytes:
            return False
        self._kept.put(ask, self._generation, answer)
        return True

    def _follow(self, served: PreparedSnapshot) -> int:
        if served is not self._served:
            self._served = served
            self._generation += 1
        return self._generation


def _given_up(answer: Kept) -> None:
    """An answer's memory file is closed once it is given up (a send under way goes on as
    bytes), not when the collector finds the answer: under load that may be minutes."""
    if isinstance(answer, BodyFile):
        answer.close()


def _size(answer: Kept) -> int:
    if isinstance(answer, memoryview):
        return answer.nbytes
    size = len(answer.body)
    return 2 * size if size >= SENDFILE_MIN else size  # and its memory file
