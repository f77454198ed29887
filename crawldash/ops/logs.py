"""Logging set-up: one line per event, no tracebacks for clients' malformed requests."""

from __future__ import annotations

import logging

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
REPEAT_SECONDS = 10.0
# Loggers whose messages can repeat many times a second when a resource runs out.
REPEATING = ("asyncio", "aiohttp.server", "aiohttp.web")


class MalformedRequestFilter(logging.Filter):
    """aiohttp logs a traceback when a client sends malformed HTTP (a bad request line, an
    over-long URL or header). That is the client's error, already answered with 400:
    log it as one INFO line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        # Imported here, not at start-up: aiohttp's import is what the first snapshot's
        # head start overlaps (live/loader/head_start.py), and only aiohttp logs these records.
        from aiohttp.http_exceptions import HttpProcessingError

        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError):
            record.msg = "malformed request rejected remote=%s status=%s reason=%s"
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else "-"
            record.args = (remote, error.code, error.message)
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


class RepeatFilter(logging.Filter):
    """A message that repeats (accept failures when descriptors run out, failing index
    saves) is logged at most once per ``every`` seconds, with a count of those left out,
    and without a traceback when its cause is a plain OSError."""

    def __init__(self, every: float = REPEAT_SECONDS) -> None:
        super().__init__()
        self.every = every
        self._last: dict[tuple[str, object], tuple[float, int]] = {}  # -> (logged at, left out)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, record.msg)
        logged_at, left_out = self._last.get(key, (-self.every, 0))
        if record.created - logged_at < self.every:
            self._last[key] = (logged_at, left_out + 1)
            return False
        self._last[key] = (record.created, 0)
        if left_out:
            record.msg = f"{record.getMessage()} ({left_out} more like this in the last "
            record.msg += f"{record.created - logged_at:.0f} s not logged)"
            record.args = None
        if record.exc_info and isinstance(record.exc_info[1], OSError):
            record.msg = f"{record.getMessage()}: {record.exc_info[1]}"
            record.args = record.exc_info = record.exc_text = None
        return True


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format=FORMAT)
    _add_once(logging.getLogger("aiohttp.server"), MalformedRequestFilter)
    for name in REPEATING:
        _add_once(logging.getLogger(name), RepeatFilter)
    if level.lower() != "debug":  # a line per batch of changes: for debugging only
        logging.getLogger("watchfiles").setLevel(logging.WARNING)


def _add_once(logger: logging.Logger, kind: type[logging.Filter]) -> None:
    if not any(isinstance(f, kind) for f in logger.filters):
        logger.addFilter(kind())
