"""Noting every request for ``/metrics``, and the access log when it is turned on.

aiohttp calls the access-log hook once per answered request. Writing each line through
``logging`` (a record, a formatter, a locked write) cost more than everything else
crawldash does per request, so lines are made here with one f-string and written to
standard error in one write per FLUSH_SECONDS.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TextIO

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

from .metrics import RequestStats

FLUSH_SECONDS = 0.5  # at most this much of the log is lost if the process is killed


class AccessLines:
    """Access-log lines in the log's own layout (time, INFO, ``aiohttp.access``), then the
    client, the request line (the path as sent), status, bytes sent (headers included, as
    aiohttp's own access log counts them), referrer, user agent and milliseconds taken."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream  # None: standard error, looked up at each write
        self._lines: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self._second = -1
        self._stamp = ""  # the current second as the log writes it

    def add(self, request: BaseRequest, response: StreamResponse, seconds: float) -> None:
        now = time.time()
        if int(now) != self._second:
            self._second = int(now)
            self._stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self._second))
        headers, version = request.headers, request.version
        referrer = headers.get("Referer", "-").replace('"', '\\"')
        agent = headers.get("User-Agent", "-").replace('"', '\\"')
        self._lines.append(
            f"{self._stamp},{int(now * 1000) % 1000:03d} INFO aiohttp.access: "
            f'{request.remote} "{request.method} {request.raw_path} '
            f'HTTP/{version.major}.{version.minor}" {response.status} {response.body_length} '
            f'"{referrer}" "{agent}" {seconds * 1000:.3f}ms\n'
        )
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_SECONDS, self.flush)

    def flush(self) -> None:
        """Write what has gathered; also at shutdown."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._lines:
            return
        text = "".join(self._lines)
        self._lines.clear()
        stream = self.stream or sys.stderr
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):  # standard error closed: nowhere to write
            pass


def request_logger(stats: RequestStats, lines: AccessLines | None) -> type[AbstractAccessLogger]:
    """aiohttp's access-log hook: it notes the request for ``/metrics`` and, with the
    access log on, adds its line to ``lines``. It costs less per request than a middleware."""
    answered, fold_at = stats.answered, stats.FOLD_AT

    class RequestLogger(AbstractAccessLogger):
        @property
        def enabled(self) -> bool:
            return True  # count every request, whatever the log level

        def log(self, request: BaseRequest, response: StreamResponse, time: float) -> None:
            # The match is read as the attribute it is kept in: ``match_info`` asserts on a
            # request that aiohttp refused (a 400) before any routing.
            answered.append((getattr(request, "_match_info", None), response.status, time))
            if len(answered) >= fold_at:
                stats.fold()
            if lines is not None:
                lines.add(request, response, time)

    return RequestLogger
