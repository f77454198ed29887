"""The loader process: new snapshots are decoded, indexed, encoded and compressed in a
process of its own, so that a large crawl never holds the serving process's GIL.

Started once (``python -m crawldash.live.loader.process``; SCHED_BATCH, a little nicer
than the server, in 0.1 ms slices: a fair share of a busy core), it
imports the loading code and forks a child per load, so that the memory a load needed is
given back when it ends.
Calls go over a Unix socket, one at a time; each reply comes back as an in-memory file,
after any parts of it that were ready first (``run(..., on_part=...)``). The server side
of a call runs in a worker thread, which waits for the reply, reads its large bytes
objects with the GIL released and unpickles the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar, cast

from ...crawl.files import LoadError
from .process import LAST, PRELOAD_VARIABLE, ended
from .replies import received

log = logging.getLogger(__name__)
T = TypeVar("T")
Call = tuple[Callable[..., Any], tuple[Any, ...]]  # a function and its arguments
Instead = Callable[[Callable[..., Any], tuple[Any, ...]], Call]
# Added to the server's niceness. Against the server, whose session it shares, a load
# takes about a quarter of a core the server keeps busy (at 19 it took a sliver, and a
# saturated server kept new crawls out for tens of seconds: freshness comes first); against
# other sessions (the crawler's service) what counts is the session's share, all of it the
# load's while the server is idle (process.py).
LOADER_NICENESS = 5
LOAD_TIMEOUT = 120.0  # seconds a call may take before the loader process is killed
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
STOP_WAIT = 5.0  # seconds a stopping server waits for a load in progress


class LoaderDied(Exception):
    """The loader process, or the child running a call, ended without replying."""


class LoaderHung(Exception):
    """A call took longer than the timeout: the loader process was killed."""


class LoaderClient:
    """Runs loads in the loader process; replaces it when it dies.

    Until ``start()``, loads run in a worker thread (before the server listens nothing is
    being answered), but for a ``head_start``: the newest snapshot, loaded in the process
    while the server is still importing its code (``serve`` spawns the process first).
    A load during which the process dies is tried once more, in a new process; if that
    one dies too, the load is a ``LoadError`` of kind ``loader_died``. A call that takes
    longer than ``timeout`` seconds (the process hangs, or was stopped) gets no reply: the
    process is killed, a new one takes the next call, and the load is a ``LoadError`` of
    kind ``timeout``.
    """

    def __init__(self, niceness: int = LOADER_NICENESS, timeout: float = LOAD_TIMEOUT) -> None:
        self.niceness = niceness
        self.timeout = timeout
        self.timeouts = 0  # calls that took too long: the loader process was killed
        self.deaths = 0  # loads during which the loader process died
        self.runs = 0  # calls that ran in the loader process (not in a thread)
        self._started = self._stopped = False
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: socket.socket | None = None  # the server's end
        self._one_call = threading.Lock()  # held by the thread making a call
        self._ahead: tuple[Callable[..., Any], tuple[Any, ...], Future[Any]] | None = None
        # Calls made another call (its arguments and all) once started: the Parquet archive
        # turns each load of a crawl into a load that archives it too (crawldash/archive/).
        self.instead: Instead | None = None
        self.preload: tuple[str, ...] = ()  # modules more for the process to import at start

    @property
    def pid(self) -> int | None:
        """The loader process's id, once it runs (a load runs in a child of it)."""
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        self._started = True

    async def warm_up(self) -> None:
        """Start the process now, not when the next crawl arrives."""
        await self.run(os.getpid)

    def spawn(self) -> None:
        """Start the process now, if it is not running: it imports the loading code while
        the caller goes on."""
        with self._one_call:
            if self._socket is None:
                self._spawned()

    def head_start(self, function: Callable[..., Any], *args: Any) -> None:
        """Start the process and ``function(*args)`` in it now, from a thread of its own;
        the next ``run`` takes its result if it is the same call, and is handed the parts it
        sent ahead first (whatever else it is, the result is dropped). Needs no event loop:
        it is meant to run before there is one."""
        future: Future[tuple[list[Any], Any]] = Future()

        def call() -> None:
            if not future.set_running_or_notify_cancel():
                return
            parts: list[Any] = []  # handed to the caller that takes the result
            try:
                future.set_result((parts, self._call(function, args, parts.append)))
            except BaseException as exc:  # run() sorts it out
                future.set_exception(exc)

        self._ahead = (function, args, future)
        self.runs += 1
        threading.Thread(target=call, name="crawldash-head-start", daemon=True).start()

    async def run(
        self, function: Callable[..., T], *args: Any, on_part: Callable[[Any], None] | None = None
    ) -> T:
        """``function(*args)`` in the loader process (a thread before ``start()``).

        Args:
            function: what to run; pickled by name, with ``args``.
            args: its arguments.
            on_part: called on the event loop with each part of the answer the call sends
                ahead of its reply (``process.send_part``), before this returns (those of a
                head start taken, at once). A call run in a thread sends none.

        Returns:
            What ``function`` returned (what it raised is raised here).
        """
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead[0] is function and ahead[1] == args:
            try:
                parts, value = await asyncio.wrap_future(ahead[2])
                if on_part is not None:
                    for part in parts:
                        on_part(part)
                return cast(T, value)
            except LoaderDied as exc:
                self.deaths += 1
                log.error("the snapshot loader process died (%s); trying the load again", exc)
            except Exception:  # it is called again, below: that call's error is the one
                pass
        if not self._started:
            return await asyncio.to_thread(function, *args)
        if self.instead is not None:
            function, args = self.instead(function, args)
        self.runs += 1
        parts = None if on_part is None else _on_loop(asyncio.get_running_loop(), on_part)
        for attempt in (1, 2):
            try:
                return cast(T, await asyncio.to_thread(self._call, function, args, parts))
            except LoaderHung:
                self.timeouts += 1
                log.error(
                    "a load took longer than %s s: the loader process was killed, and a new "
                    "one takes the next load",
                    self.timeout,
                )
                raise LoadError(
                    "timeout", f"its load took longer than --load-timeout ({self.timeout:g} s)"
                ) from None
            except LoaderDied as exc:
                self.deaths += 1
                log.error(
                    "the snapshot loader process died (%s)%s",
                    exc,
                    "; trying the load again in a new one" if attempt == 1 else "",
                )
        raise LoadError("loader_died", "the loader process died twice while loading it")

    async def close(self) -> None:
        """End the process, once a load in progress has replied (or after a few seconds)."""
        await asyncio.to_thread(self.stop)

    def stop(self) -> None:
        """``close()`` without an event loop: it blocks."""
        self._stopped = True
        self._close()

    def _call(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        on_part: Callable[[Any], object] | None = None,
    ) -> Any:
        with self._one_call:
            if self._stopped:
                raise LoadError("loader_died", "the server is stopping")
            try:
                loader = self._socket or self._spawned()
                loader.settimeout(self.timeout)
                loader.send(pickle.dumps((function, args), protocol=5))
                while True:
                    (kind, value), more = received(loader)
                    if more == LAST:
                        break
                    if on_part is not None and kind == "ok":
                        on_part(value)
            except TimeoutError:  # hung, or stopped: it is killed, even stopped
                self._discard()
                raise LoaderHung from None
            except (OSError, EOFError) as exc:  # it ended, or could not be started
                raise LoaderDied(self._discard() or str(exc)) from exc
        if kind == "died":
            raise LoaderDied(value)
        if kind == "raised":
            raise value
        return value

    def _spawned(self) -> socket.socket:
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(
            filter(None, (PACKAGE_ROOT, environment.get("PYTHONPATH")))
        )
        environment[PRELOAD_VARIABLE] = " ".join(self.preload)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = [sys.executable, "-m", "crawldash.live.loader.process"]
        try:
            with theirs:
                self._process = subprocess.Popen(
                    [*command, str(self.niceness), str(theirs.fileno())],
                    stdin=subprocess.DEVNULL,
                    pass_fds=(theirs.fileno(),),
                    env=environment,
                    # Its own process group (the terminal's Ctrl-C is the server's to
                    # handle), in the server's session: where the kernel schedules each
                    # session as a group (autogroup), its niceness only weighs against the
                    # processes of the same session.
                    process_group=0,
                )
        except BaseException:
            ours.close()
            raise
        self._socket = ours
        return ours

    def _close(self) -> None:
        got_it = self._one_call.acquire(timeout=STOP_WAIT)
        try:
            if got_it and self._socket is not None and self._process is not None:
                self._socket.shutdown(socket.SHUT_RDWR)  # it ends when it reads that
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(STOP_WAIT)
            self._discard()
        finally:
            if got_it:
                self._one_call.release()

    def _discard(self) -> str:
        """Kill the loader process and the child running a load, if any; how it ended."""
        process, self._process = self._process, None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if process is None:
            return ""
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        return ended(process.wait())


def _on_loop(loop: asyncio.AbstractEventLoop, call: Callable[[Any], None]) -> Callable[[Any], None]:
    """``call``, made from another thread to run on ``loop``."""

    def soon(value: Any) -> None:
        loop.call_soon_threadsafe(call, value)

    return soon
