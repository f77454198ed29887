"""A warning that repeats, logged at most once per interval for each cause, with a count of
the lines left out: a fault that lasts (a data folder replaced by a file) says so once, not
on every tick of the task that meets it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

EVERY = 10.0  # seconds between two lines of one cause, as docs/operating.md promises
MAX_CAUSES = 64  # causes remembered at once; past it the oldest is forgotten


class Repeats:
    """Logs a warning of a cause at once, then at most once per ``every`` seconds."""

    def __init__(
        self,
        logger: logging.Logger,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger, self.every, self.clock = logger, every, clock
        # cause -> (when it was last logged, lines of it left out since)
        self._causes: dict[str, tuple[float, int]] = {}

    def warn(self, cause: str, message: str, *args: object) -> bool:
        """Log ``message % args`` unless ``cause`` was logged less than ``every`` ago.

        Args:
            cause: what makes two warnings the same (a task and its error's kind).
            message: a %-style format, as for ``logging``.
            args: its arguments.

        Returns:
            Whether a line was written.
        """
        now = self.clock()
        logged_at, left_out = self._causes.get(cause, (None, 0))
        if logged_at is not None and now - logged_at < self.every:
            self._causes[cause] = (logged_at, left_out + 1)
            return False
        if left_out:
            message += f" ({left_out} more like it not logged)"
        self._causes.pop(cause, None)
        if len(self._causes) >= MAX_CAUSES:
            del self._causes[next(iter(self._causes))]
        self._causes[cause] = (now, 0)
        self.logger.warning(message, *args)
        return True

    def clear(self, cause: str) -> bool:
        """Forget ``cause`` (it has stopped); whether it was being remembered."""
        return self._causes.pop(cause, None) is not None
