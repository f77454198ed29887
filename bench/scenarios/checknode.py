"""The live check under load: 200 clients asking at once for checks of a slow peer (it
answers each handshake after SLOW seconds, on HOSTS addresses), each check of a new
address and port, while /api/status is measured on one connection, against /api/status
alone. The peer counts
the connections it holds at once: never more than ``--live-check-in-flight`` (its
default). Clients come through a trusted proxy, each request with an X-Forwarded-For of
its own: many users, each within the default per-client limit. crawldash on core 1;
wrk, the peer and the clients on core 0."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import aiohttp

from bench.context import Bench
from bench.load import Sample, wrk
from bench.rows import Measure, Row, Section, Unit
from crawldash.checknode import wire
from crawldash.settings.serve import Settings

CLIENTS = 200
# The peer's listening addresses, each a host of its own in 127.0.0.0/8 (crawldash checks
# one host at a time and a few times a minute): each check a new address and port.
HOSTS = 1024
SLOW = 1.0  # seconds the peer waits before its version
SETTLE = 0.5  # seconds the checks run before /api/status is measured
P99_RATIO_LIMIT = 2.0
IN_FLIGHT = Settings().live_check_in_flight  # the default a user starts with
MAGIC = bytes.fromhex("f9beb4d9")
COUNTER = itertools.count(1)
OPTIONS = (
    "--live-check",
    "main",
    "--live-check-magic",
    "main=f9beb4d9",
    "--live-check-allow",
    "127.0.0.0/8",
    "--trusted-proxy",
    "127.0.0.1",
)


@dataclass
class Load:
    """What the slow peer and the clients saw."""

    open_now: int = 0
    most_open: int = 0
    connections: int = 0
    answers: Counter[int] = field(default_factory=Counter)  # status -> answers


def run(bench: Bench) -> list[Row]:
    seconds = max(bench.config.seconds, 2)
    alone: list[Sample] = []
    beside: list[Sample] = []
    with bench.crawldash(bench.ready_state(), *OPTIONS) as running:
        status = running.base + "/api/status"
        for _ in range(bench.config.runs):
            alone.append(wrk(status, running.pid, seconds, {}, connections=1))
        with checking(running.base) as load:
            time.sleep(SETTLE)
            for _ in range(bench.config.runs):
                beside.append(wrk(status, running.pid, seconds, {}, connections=1))
    idle_p99, loaded_p99 = p99(alone), p99(beside)
    answered = ", ".join(f"{count:,} {code}" for code, count in sorted(load.answers.items()))
    return [
        Measure(
            Section.TARGETS,
            f"/api/status, one connection, beside {CLIENTS} clients asking for live checks "
            "of a slow peer: p99 over p99 alone",
            (loaded_p99 / idle_p99,),
            Unit.RATIO,
            2,
            limits=(P99_RATIO_LIMIT,),
            details=f"p99 {loaded_p99:.2f} ms beside the checks, {idle_p99:.2f} ms alone; "
            f"answers: {answered}",
        ),
        Measure(
            Section.TARGETS,
            f"connections the slow peer held at once, over --live-check-in-flight ({IN_FLIGHT})",
            (load.most_open / IN_FLIGHT,),
            Unit.RATIO,
            2,
            limits=(1.0,),
            details=f"at most {load.most_open} at once; {load.connections:,} in all",
        ),
    ]


def p99(samples: list[Sample]) -> float:
    return float(statistics.median(sample.p99 for sample in samples)) * 1000


@contextlib.contextmanager
def checking(base: str) -> Iterator[Load]:
    """The slow peer and the clients, on a thread of their own, until the block ends."""
    load, stop, ready = Load(), threading.Event(), threading.Event()
    thread = threading.Thread(target=asyncio.run, args=(_run(base, load, stop, ready),))
    thread.start()
    ready.wait(30)
    try:
        yield load
    finally:
        stop.set()
        thread.join(60)


async def _run(base: str, load: Load, stop: threading.Event, ready: threading.Event) -> None:
    async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        load.connections += 1
        load.open_now += 1
        load.most_open = max(load.most_open, load.open_now)
        try:
            await reader.readexactly(wire.HEADER_SIZE)
            await asyncio.sleep(SLOW)
            version = wire.Version(
                70016,
                1,
                int(time.time()),
                wire.NetworkAddress(),
                wire.NetworkAddress(),
                1,
                "/slow:1/",
                900_000,
            )
            writer.write(wire.version_message(MAGIC, version) + wire.verack(MAGIC))
            await reader.read(1024)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            load.open_now -= 1
            writer.transport.abort()

    hosts = [f"127.1.{n >> 8}.{n & 255}" for n in range(HOSTS)]
    servers = [await asyncio.start_server(peer, host, 0) for host in hosts]
    targets = itertools.cycle(server.sockets[0].getsockname()[:2] for server in servers)
    timeout = aiohttp.ClientTimeout(total=60)
    connector = aiohttp.TCPConnector(limit=CLIENTS)
    async with aiohttp.ClientSession(base, timeout=timeout, connector=connector) as session:
        ready.set()
        clients = [
            asyncio.create_task(_client(session, targets, load, stop)) for _ in range(CLIENTS)
        ]
        await asyncio.gather(*clients)
    for server in servers:
        server.close()


async def _client(
    session: aiohttp.ClientSession,
    targets: Iterator[tuple[str, int]],
    load: Load,
    stop: threading.Event,
) -> None:
    host, port = next(targets)
    while not stop.is_set():
        # Each request from a client of its own: many users, each within its limit.
        asked = next(COUNTER)
        client = f"100.{64 + (asked >> 16) % 64}.{(asked >> 8) & 255}.{asked & 255}"
        headers = {"X-Forwarded-For": client}
        form = {"address": host, "port": str(port)}
        async with session.post("/api/v1/checknode/", data=form, headers=headers) as response:
            await response.read()
            load.answers[response.status] += 1
            retry_after = float(response.headers.get("Retry-After", "0"))
        if response.status == 200:
            host, port = next(targets)
        else:  # busy: every check slot taken; as a client honouring Retry-After
            await asyncio.sleep(min(retry_after, 5.0) or 0.2)
