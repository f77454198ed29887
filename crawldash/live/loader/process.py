"""The loader process itself: started once by the server, it imports the loading code,
then forks a child for each call it is sent, so that the memory a load needs is given
back when the child ends (a process that decoded a large crawl keeps memory it no longer
uses). One process, not multiprocessing's fork server, resource tracker and pool:
at rest crawldash is the server and this.

Calls arrive on a Unix socket (one datagram each, a pickle of ``(function, args)``). The
child writes its reply into an in-memory file (memfd), and the process sends the server
that file's descriptor with its length: the reply is never copied through a pipe. In the
file, each bytes object of LARGE bytes or more (the bodies, each node's JSON, the CSV
records) follows the pickle instead of being inside it, so that the server reads each
straight into a bytes object of its own with the GIL released, and unpickles only the
rest while holding it (``packed()`` and ``unpacked()``, in ``replies.py``). A reply is
``("ok", value)``, ``("raised", exception)`` or ``("died", why)`` when the child ended
without replying (killed, or out of memory). Before it, a call may send parts of its
answer that are ready early (``send_part``: a new crawl, before what follows it is made;
a process the child forks beside itself, ``forked``, sends its half of the crawl too), each
as a reply of its own marked as one more will follow. After a reply the process may do
work of its own that every later child inherits (``AFTERWARDS``: a crawl's hosts spelled).
Run as ``python -m crawldash.live.loader.process NICENESS SOCKET_FD``; it ends when the
server closes its end.

A load must finish on a machine whose every core is busy (bitnodes' crawler runs beside
crawldash), and must not slow the answers when it shares a core with the server. So the
process runs a little nicer than the server (``client.LOADER_NICENESS``), a fair share of
a busy core, under the SCHED_BATCH policy: the kernel never lets a batch task preempt
another on waking. (SCHED_IDLE, tried before, gets only the time nothing else wants: on a
crawler's machine there is none, and new crawls waited behind the crawler; nor may a
process leave it when starved, unless its RLIMIT_NICE allows.) The process asks for the
shortest scheduler slice the kernel grants (0.1 ms; Linux 6.12 and later, for any user;
where the kernel refuses or predates it, loads run with the default slice), a trade: a
load that shares a core with the server gets its share in short turns, and its deadline
comes before a waking server thread's, which then waits for the load's turn to end, seen
by the kernel at its next tick (4 ms at 250 Hz). With the default slice the waking server
came first, but new crawls were served later beside the requests (docs/architecture.md).
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import os
import pickle
import socket
import sys
from collections.abc import Callable
from typing import Any

from .priority import SLICE_NS, batch_policy, short_slices
from .replies import HEADER, packed

LAST, PART = 0, 1
PRELOADED = (
    "crawldash.live.snapshot.prepared",
    "crawldash.live.snapshot.past_crawls",
    "crawldash.crawl.files",
)
PRELOAD_VARIABLE = "CRAWLDASH_LOADER_PRELOAD"  # more modules, from LoaderClient.preload
MAX_CALL = 1 << 20  # bytes: a call names a function and a few small arguments
PR_SET_CHILD_SUBREAPER = 36
# Work this process does itself after a call's reply, by the called function's name: what
# it learns (a crawl's hosts spelled, say), every child forked after inherits.
AFTERWARDS: dict[str, Callable[..., object]] = {}
_after_reply: list[Callable[[], None]] | None = None  # in a child: work left for after it
_parts_to: socket.socket | None = None  # in a child: the server's socket, for send_part


def main(argv: list[str] | None = None) -> int:
    """Serve calls until the server closes its end of the socket.

    Args:
        argv: ``[NICENESS, SOCKET_FD]``: how much lower than the server's this process
            runs, and its end of the socket the server made.

    Returns:
        The exit status.
    """
    niceness, fd = (int(value) for value in (argv if argv is not None else sys.argv[1:]))
    # Run as ``-m``, this module is __main__: loads that import it (after_reply) get this one.
    sys.modules.setdefault("crawldash.live.loader.process", sys.modules[__name__])
    os.nice(niceness)
    short_slices(SLICE_NS)  # first: the kernel keeps it through the change of policy
    batch_policy()
    for module in (*PRELOADED, *os.environ.get(PRELOAD_VARIABLE, "").split()):
        importlib.import_module(module)
    gc.freeze()  # what is imported now is shared with every child, never copied
    subreaper()
    with socket.socket(fileno=fd) as server:
        try:
            while call := server.recv(MAX_CALL):
                reply = in_child(call, server)
                try:
                    send_reply(server, reply, LAST)
                finally:
                    os.close(reply)
                afterwards(call)
        except (ConnectionError, KeyboardInterrupt):  # the server has gone
            pass
    return 0


def afterwards(call: bytes) -> None:
    """The work AFTERWARDS names for the function called, if any, done here; whatever it
    raises is its own affair (the load itself went as its reply said)."""
    try:
        function, args = pickle.loads(call)
        work = AFTERWARDS.get(f"{function.__module__}.{function.__qualname__}")
        if work is not None:
            work(*args)
    except Exception:  # nothing it does is needed
        pass


def send_reply(server: socket.socket, reply: int, more: int) -> None:
    """Send the server the memfd ``reply``, with its length and whether more follow."""
    socket.send_fds(server, [HEADER.pack(os.fstat(reply).st_size, more)], [reply])


def in_child(call: bytes, server: socket.socket) -> int:
    """A memfd holding the reply to ``call``, made in a child process forked for it (which
    may send parts of its answer ahead of it, on ``server``)."""
    reply = os.memfd_create("crawldash-reply")
    _reap()
    pid = os.fork()
    if pid == 0:  # the child
        # It lives for one call and its memory goes back when it ends: the collector would
        # only walk the crawl's objects again and again while they are made.
        gc.disable()
        global _after_reply, _parts_to
        _after_reply, _parts_to = [], server
        code = reply_to(call, reply)
        _run_after_reply()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or os.fstat(reply).st_size == 0:
        os.ftruncate(reply, 0)
        os.lseek(reply, 0, os.SEEK_SET)
        write_all(reply, *packed(("died", ended(os.waitstatus_to_exitcode(status)))))
    return reply


def send_part(value: Any) -> bool:
    """Send ``value`` to the caller now, ahead of the call's reply: the part of an answer
    that is ready first (the caller may use it while the rest is made; a caller that did
    not ask for parts skips it).

    Args:
        value: what to send; pickled as a reply is.

    Returns:
        False where it cannot be sent: outside a child of the loader process (a load run
        in a thread), or the server has gone.
    """
    if _parts_to is None:
        return False
    part = os.memfd_create("crawldash-part")
    try:
        write_all(part, *packed(("ok", value)))
        send_reply(_parts_to, part, PART)
    except OSError:
        return False
    finally:
        os.close(part)
    return True


def sends_parts() -> bool:
    """Whether this runs in a child of the loader process (else in a thread of the
    server, before the loader process is started): parts can be sent ahead."""
    return _parts_to is not None


def forked(work: Callable[[], None]) -> Callable[[], bool] | None:
    """Run ``work`` in a process forked from this child of the loader, beside it (on
    another core, where there is one); it may ``send_part`` too.

    Returns:
        A wait for its end, which says whether ``work`` returned; None outside a child of
        the loader process (a load run in a thread): nothing is run.
    """
    if _parts_to is None:
        return None
    pid = os.fork()
    if pid == 0:  # killed with the loader's process group if the load is
        code = 1
        try:
            work()
            code = 0
        finally:
            os._exit(code)

    def wait() -> bool:
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0

    return wait


def after_reply(work: Callable[[], None]) -> bool:
    """Leave ``work`` for after the reply: a process forked from the child runs it while
    the child ends, so the reply goes out first (the crawl's archiving, after its load).

    Returns:
        False outside a child of the loader process (a load run in a thread): not run.
    """
    if _after_reply is None:
        return False
    _after_reply.append(work)
    return True


def _run_after_reply() -> None:
    if not _after_reply or os.fork() != 0:
        return
    # Nothing the loader holds stays open here: not the reply (the server reads it), not
    # the server's socket (its end must see the loader's end when the loader dies).
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    try:
        for work in _after_reply:
            work()
    finally:
        os._exit(0)


def subreaper() -> None:
    """Become the parent of what a child leaves running (``after_reply``'s work), so that
    it is reaped here (``_reap``), wherever the loader runs (PID 1 may never reap)."""
    with_errors = ctypes.CDLL(None, use_errno=True)
    with_errors.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _reap() -> None:
    """Reap what ``after_reply`` work has ended."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def reply_to(call: bytes, reply: int) -> int:
    """Run the call and write its reply; the child's exit status."""
    try:
        function, args = pickle.loads(call)
        write_all(reply, *outcome(function, args))
        return 0
    except BaseException:  # nothing to reply: the parent says the child died
        return 1


def outcome(function: Callable[..., Any], args: tuple[Any, ...]) -> list[bytes]:
    """The reply to a call, ``packed()``: what it returned, or what it raised."""
    try:
        return packed(("ok", function(*args)))
    except Exception as exc:  # the caller's to handle, as if it had raised there
        try:
            return packed(("raised", exc))
        except Exception:  # an exception that cannot be pickled: its text then
            return packed(("raised", RuntimeError(f"{type(exc).__name__}: {exc}")))


def ended(code: int) -> str:
    """How a process ended, from its exit code (negative: the signal that killed it)."""
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"


def write_all(fd: int, *parts: bytes) -> None:
    for part in parts:
        view = memoryview(part)
        while view:
            view = view[os.write(fd, view) :]


if __name__ == "__main__":
    sys.exit(main())
