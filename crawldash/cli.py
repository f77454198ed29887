"""The command line: ``crawldash serve`` and ``crawldash demo``."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from aiohttp import web

from . import __version__
from .logs import configure_logging
from .main import create_app
from .settings import Settings
from .workers import run_workers

log = logging.getLogger("crawldash")
LOG_LEVELS = ("debug", "info", "warning", "error")
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """Bad arguments: one line that says why, and exit status 2."""
        self.exit(2, f"{self.prog}: error: {message}\n")


def whole_number(low: int, high: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}-{high}")
        return value

    return convert


def byte_size(text: str) -> int:
    """Bytes, with an optional K, M or G suffix (powers of 1024)."""
    number, unit = text.strip().lower().rstrip("b"), ""
    if number[-1:] in _SIZE_UNITS:
        number, unit = number[:-1], number[-1]
    try:
        value = int(number) * _SIZE_UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size such as 268435456 or 256M"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError("the size must be at least 1 byte")
    return value


def env(name: str, default: str) -> str:
    return os.environ.get(f"CRAWLDASH_{name}", default)


def add_server_options(parser: argparse.ArgumentParser, *, data_dir: bool = True) -> None:
    """Options shared by ``serve`` and ``demo``; each has a ``CRAWLDASH_*`` variable."""
    if data_dir:
        parser.add_argument(
            "--data-dir",
            type=Path,
            default=env("DATA_DIR", "data"),
            help="the crawler's output folder [CRAWLDASH_DATA_DIR, ./data]",
        )
        parser.add_argument(
            "--state-dir",
            type=Path,
            default=os.environ.get("CRAWLDASH_STATE_DIR"),
            help="where the history index is kept [CRAWLDASH_STATE_DIR, $XDG_STATE_HOME/crawldash]",
        )
    parser.add_argument(
        "--host",
        default=env("HOST", "127.0.0.1"),
        help="address to bind; crawldash has no authentication, so keep it "
        "on a trusted network [CRAWLDASH_HOST, 127.0.0.1]",
    )
    parser.add_argument(
        "--port",
        type=whole_number(1, 65535),
        default=env("PORT", "8080"),
        help="[CRAWLDASH_PORT, 8080]",
    )
    parser.add_argument(
        "--history-size",
        type=whole_number(1, 10_000_000),
        default=env("HISTORY_SIZE", "8640"),
        help="crawls kept in the history [CRAWLDASH_HISTORY_SIZE, 8640]",
    )
    parser.add_argument(
        "--stale-after",
        type=whole_number(1, 10**9),
        default=os.environ.get("CRAWLDASH_STALE_AFTER"),
        help="seconds after which the snapshot is stale [CRAWLDASH_STALE_AFTER, three times "
        "the median crawl interval, at least 1800]",
    )
    parser.add_argument(
        "--stuck-after",
        type=whole_number(1, 10**9),
        default=env("STUCK_AFTER", "3600"),
        help="seconds of one non-running state, or of no status update, after which the "
        "crawler is stuck [CRAWLDASH_STUCK_AFTER, 3600]",
    )
    parser.add_argument(
        "--max-file-size",
        type=byte_size,
        default=env("MAX_FILE_SIZE", "256M"),
        help="larger crawler files are rejected [CRAWLDASH_MAX_FILE_SIZE, 256M]",
    )
    parser.add_argument(
        "--cache-max-age",
        type=whole_number(0, 10**9),
        default=os.environ.get("CRAWLDASH_CACHE_MAX_AGE"),
        help="Cache-Control max-age of snapshot and history [CRAWLDASH_CACHE_MAX_AGE, "
        "until the next crawl is expected]",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=None,
        help="an origin allowed to read the API from a browser, or *; repeatable "
        "[CRAWLDASH_CORS_ORIGIN, comma-separated; none]",
    )
    parser.add_argument(
        "--keepalive-timeout",
        type=whole_number(1, 86400),
        default=env("KEEPALIVE_TIMEOUT", "15"),
        help="seconds a connection may stay idle or take to send a request "
        "[CRAWLDASH_KEEPALIVE_TIMEOUT, 15]",
    )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=env("LOG_LEVEL", "info"),
        type=str.lower,
        help="[CRAWLDASH_LOG_LEVEL, info]",
    )
    parser.add_argument(
        "--workers",
        type=whole_number(1, 64),
        default=env("WORKERS", "1"),
        help="server processes sharing the port (SO_REUSEPORT), each with its own state "
        "[CRAWLDASH_WORKERS, 1]",
    )
    parser.add_argument(
        "--max-subscribers",
        type=whole_number(1, 100_000),
        default=env("MAX_SUBSCRIBERS", "100"),
        help="concurrent /api/events subscribers [CRAWLDASH_MAX_SUBSCRIBERS, 100]",
    )
    parser.add_argument(
        "--access-log",
        action=argparse.BooleanOptionalAction,
        default=env("ACCESS_LOG", "1") not in ("0", "false", "no", "off"),
        help="one line per request [CRAWLDASH_ACCESS_LOG, on]",
    )


def build_parser() -> Parser:
    parser = Parser(prog="crawldash", description="Serve a network crawler's output as JSON.")
    parser.add_argument("--version", action="version", version=f"crawldash {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    serve = commands.add_parser("serve", help="serve a crawler's data folder")
    add_server_options(serve)
    demo = commands.add_parser("demo", help="generate a realistic data folder and serve it")
    demo.add_argument(
        "--dir",
        type=Path,
        default=Path("demo-data"),
        help="where to write the demo (data/ and state/ inside) [./demo-data]",
    )
    demo.add_argument("--nodes", type=whole_number(10, 1_000_000), default=15_000)
    demo.add_argument(
        "--days",
        type=whole_number(1, 365),
        default=7,
        help="days of crawls, one every 10 minutes [7]",
    )
    demo.add_argument(
        "--keep-files",
        type=whole_number(1, 1_000_000),
        default=24,
        help="newest crawl files left in data/; older crawls live on in the "
        "history index, as after a crawler prunes its files [24]",
    )
    demo.add_argument("--seed", type=int, default=1)
    demo.add_argument("--no-serve", action="store_true", help="write the folder and exit")
    add_server_options(demo, data_dir=False)
    bridge = commands.add_parser(
        "bitnodes-status", help="write bitnodes' crawler status from Redis to status.json"
    )
    bridge.add_argument(
        "--redis",
        default=env("REDIS_URL", "redis://localhost:6379/0"),
        help="[CRAWLDASH_REDIS_URL, redis://localhost:6379/0]",
    )
    bridge.add_argument(
        "--out",
        type=Path,
        default=os.environ.get("CRAWLDASH_STATUS_OUT"),
        required="CRAWLDASH_STATUS_OUT" not in os.environ,
        help="the status.json to write, in the data folder [CRAWLDASH_STATUS_OUT]",
    )
    bridge.add_argument(
        "--interval",
        type=seconds,
        default=env("BRIDGE_INTERVAL", "10"),
        help="seconds between reads [CRAWLDASH_BRIDGE_INTERVAL, 10]",
    )
    bridge.add_argument(
        "--log-level", choices=LOG_LEVELS, default=env("LOG_LEVEL", "info"), type=str.lower
    )
    return parser


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.1 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"{value} is outside 0.1-86400 seconds")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    configure_logging(args.log_level)
    if args.command == "bitnodes-status":
        return run_bridge(args)
    if args.command == "demo":
        from .demo import write_demo

        data_dir, state_dir = write_demo(
            args.dir,
            nodes=args.nodes,
            crawls=args.days * 144,
            keep_files=args.keep_files,
            seed=args.seed,
        )
        if args.no_serve:
            return 0
        args.data_dir, args.state_dir = data_dir, state_dir
    serve(settings_from(args))
    return 0


def run_bridge(args: argparse.Namespace) -> int:
    try:
        from . import bridge
    except ImportError:
        print(
            "crawldash: error: bitnodes-status needs redis: pip install 'crawldash[bitnodes]'",
            file=sys.stderr,
        )
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    bridge.run(args.redis, args.out, args.interval, stop)
    return 0


def settings_from(args: argparse.Namespace) -> Settings:
    return Settings(
        data_dir=args.data_dir,
        host=args.host,
        port=args.port,
        history_size=args.history_size,
        state_dir=args.state_dir,
        stale_after=args.stale_after,
        stuck_after=args.stuck_after,
        max_file_size=args.max_file_size,
        log_level=args.log_level,
        cache_max_age=args.cache_max_age,
        cors_origins=cors_origins(args.cors_origin),
        keepalive_timeout=args.keepalive_timeout,
        access_log=args.access_log,
        max_subscribers=args.max_subscribers,
        workers=args.workers,
    )


def cors_origins(given: list[str] | None) -> tuple[str, ...]:
    """Origins from the command line, else from CRAWLDASH_CORS_ORIGIN (comma-separated)."""
    values = given if given is not None else [os.environ.get("CRAWLDASH_CORS_ORIGIN", "")]
    return tuple(o.strip() for value in values for o in value.split(",") if o.strip())


def serve(settings: Settings) -> None:
    if not is_loopback(settings.host):
        log.warning(
            "binding to %s, which is not a loopback address: crawldash has no authentication, "
            "so anyone who can reach this address can read its data",
            settings.host,
        )
    if settings.workers > 1:
        sys.exit(run_workers(settings, serve_one))
    serve_one(settings, False)


def serve_one(settings: Settings, reuse_port: bool) -> None:
    """One server process; with ``reuse_port`` it shares the port with other workers."""
    if reuse_port:  # a spawned worker: it starts with no logging set up
        configure_logging(settings.log_level)
    log.info("serving %s on http://%s:%d", settings.data_dir, settings.host, settings.port)
    web.run_app(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        print=None,
        backlog=1024,
        handler_cancellation=True,  # a client that goes away ends its event stream at once
        reuse_port=reuse_port or None,
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
