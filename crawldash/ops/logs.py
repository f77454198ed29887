"""Logging set-up: one line per event, no tracebacks for clients' malformed requests."""

from __future__ import annotations

import logging

from aiohttp.http_exceptions import HttpProcessingError

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class MalformedRequestFilter(logging.Filter):
    """aiohttp logs a traceback when a client sends malformed HTTP (a bad request line, an
    over-long URL or header). That is the client's error, already answered with 400:
    log it as one INFO line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError):
            record.msg = "malformed request rejected remote=%s status=%s reason=%s"
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else "-"
            record.args = (remote, error.code, error.message)
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format=FORMAT)
    server_logger = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, MalformedRequestFilter) for f in server_logger.filters):
        server_logger.addFilter(MalformedRequestFilter())
