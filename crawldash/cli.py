"""The command line: ``crawldash serve``, ``demo``, ``bitnodes-status``, ``archive`` and
``options``.

Every option comes from the settings table (``settings/serve.py``): its flag, its environment
variable, its parser and its help, read by ``settings/command_line.py``. The command line
wins over the environment; a bad value from either exits with status 2 and one line that
names the flag or the variable. Here: which command takes which table, and running each.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__
from .crawl.address import AddressError, parse_address
from .live.loader.client import LoaderClient
from .ops.logs import configure_logging
from .ops.startup import (
    check_can_start,
    default_max_connections,
    is_loopback,
    limit_malloc_arenas,
    raise_open_file_limit,
)
from .ops.workers import run_workers
from .settings.archive import ArchiveSettings
from .settings.bridge import BridgeSettings
from .settings.command_line import Parser, UsageError, add_options, settings_from
from .settings.demo import SERVER_ONLY, DemoSettings
from .settings.networks import DEFAULT_NETWORK, NetworkFolder
from .settings.options import markdown_table, options_of
from .settings.serve import Settings, StartupError

log = logging.getLogger("crawldash")
# command -> (what it does, ((settings table, options of it left out), ...))
COMMANDS: dict[str, tuple[str, tuple[tuple[type[Any], tuple[str, ...]], ...]]] = {
    "serve": ("serve a crawler's data folder", ((Settings, ()),)),
    "demo": (
        "generate a realistic data folder and serve it",
        ((DemoSettings, ()), (Settings, SERVER_ONLY)),
    ),
    "bitnodes-status": (
        "write bitnodes' crawler status from Redis to status.json",
        ((BridgeSettings, ()),),
    ),
    "archive": (
        "put a data folder's crawls into the Parquet archive (resumable, never twice)",
        ((ArchiveSettings, ()),),
    ),
}


def build_parser() -> Parser:
    parser = Parser(prog="crawldash", description="Serve a network crawler's output as JSON.")
    parser.add_argument("--version", action="version", version=f"crawldash {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command, (summary, tables) in COMMANDS.items():
        sub = commands.add_parser(command, help=summary, description=summary)
        for table, skip in tables:
            add_options(sub, table, skip)
    options = commands.add_parser(
        "options",
        help="print a command's own options as a Markdown table (as in docs/operating.md)",
    )
    options.add_argument("of", choices=list(COMMANDS), help="the command")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (``sys.argv[1:]`` if None); returns the exit status."""
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return _run(args)
    except UsageError as exc:
        print(f"crawldash {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"crawldash {args.command}: error: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.command == "options":
        own_table, _ = COMMANDS[args.of][1][0]  # demo also takes serve's, shown with serve
        print(markdown_table(own_table), end="")
        return 0
    if args.command == "bitnodes-status":
        return run_bridge(settings_from(BridgeSettings, args))
    if args.command == "archive":
        return run_archive(settings_from(ArchiveSettings, args))
    if args.command == "demo":
        demo = settings_from(DemoSettings, args)
        settings = settings_from(Settings, args, SERVER_ONLY)
        configure_logging(settings.log_level)
        return run_demo(demo, settings)
    settings = settings_from(Settings, args)
    _check_networks(settings, args)
    configure_logging(settings.log_level)
    serve(settings)
    return 0


def _check_networks(settings: Settings, given: argparse.Namespace) -> None:
    """One way to name the folders served, and the folders' options right."""
    data_dir_variable = dict(options_of(Settings))["data_dir"].env or ""
    if settings.networks and ("data_dir" in given or data_dir_variable in os.environ):
        raise UsageError(
            "give the folders served with --data-dir (one network) or --network NAME=DIR, not both"
        )
    _check_folders(settings)


def _check_folders(settings: Settings) -> None:
    """No option naming a network not served, and watched nodes that are addresses."""
    try:
        _ = settings.folders
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for folder in settings.folders:
        for address in folder.watches:
            try:
                parse_address(address)
            except AddressError as exc:
                raise UsageError(f"--watch {address!r} of {folder.name}: {exc}") from None


def run_demo(demo: DemoSettings, settings: Settings) -> int:
    from .demo.launch import run  # serve's start-up does without it

    def checked_serve(served: Settings) -> None:
        _check_folders(served)
        serve(served)

    return run(demo, settings, checked_serve)


def run_archive(settings: ArchiveSettings) -> int:
    configure_logging("info")
    try:
        from .archive.backfill import backfill
        from .crawl.decode import Rules
    except ImportError:
        raise UsageError(
            "archive needs pyarrow: pip install '/path/to/crawldash[archive]' (the clone's folder)"
        ) from None
    if not settings.data_dir.is_dir():
        raise UsageError(f"--data-dir {settings.data_dir}: not a folder")
    try:
        done = backfill(
            settings.data_dir,
            settings.archive_dir,
            settings.network,
            Rules(settings.max_file_size, max_clock_skew=settings.max_clock_skew),
        )
    except OSError as exc:
        raise StartupError(f"--archive-dir {settings.archive_dir}: {exc}") from None
    for timestamp, why in sorted(done.refused.items()):
        log.warning("crawl %s not archived: %s", timestamp, why)
    log.info(
        "archived %d crawls in %.1f s (%d were archived before; %d left out, each said above)",
        len(done.archived),
        done.seconds,
        done.skipped,
        len(done.refused),
    )
    return 0


def run_bridge(bridge_settings: BridgeSettings) -> int:
    configure_logging(bridge_settings.log_level)
    try:
        from .bridge import status as bridge
    except ImportError:
        raise UsageError(
            "bitnodes-status needs redis: pip install '/path/to/crawldash[bitnodes]' "
            "(the clone's folder)"
        ) from None
    url = bridge_settings.redis
    try:
        client = bridge.connect(url, bridge_settings.redis_password_file)
    except ValueError as exc:
        raise UsageError(f"--redis {bridge.redacted(url)}: {exc}") from None
    except OSError as exc:
        raise UsageError(f"--redis-password-file: {exc.strerror or exc}") from None
    bridge.run_until_signalled(client, bridge_settings)
    return 0


def serve(settings: Settings) -> None:
    check_can_start(settings.resolved_state_dir, settings.max_file_size)
    if settings.archive_dir is not None:
        from .archive.view import check_archive_extra

        check_archive_extra()
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
    """One server process; with ``reuse_port`` it shares the port with other workers. Its
    loader process starts first and loads the newest crawl while this one imports aiohttp
    and its handlers (``live/loader/head_start.py``): hence the imports in the middle."""
    limit_malloc_arenas()  # before the first thread allocates
    loader = LoaderClient(timeout=settings.load_timeout)
    if settings.archive_dir is not None:
        from .archive import LOADER_PRELOAD

        loader.preload = LOADER_PRELOAD
    loader.spawn()
    if reuse_port:  # a spawned worker: it starts with no logging set up
        configure_logging(settings.log_level)
    open_files = raise_open_file_limit()
    connections = settings.max_connections or default_max_connections(open_files)

    folders = settings.folders

    def listening() -> None:  # said once the socket listens, not before
        log.info(
            "crawldash %s serving %s on http://%s:%d open_files=%d max_connections=%d",
            __version__,
            _described(folders),
            settings.host,
            settings.port,
            open_files,
            connections,
        )

    from .crawl.decode import Rules
    from .live.loader.head_start import start_newest_load

    first = folders[0].data_dir
    start_newest_load(loader, first, Rules.of(settings))
    from .app import create_app
    from .web import server

    try:
        server.run(
            create_app(settings, loader),
            host=settings.host,
            port=settings.port,
            max_connections=connections,
            reuse_port=reuse_port,
            on_listening=listening,
        )
    finally:
        loader.stop()  # already stopped if the app ran; not if it never started


def _described(folders: Sequence[NetworkFolder]) -> str:
    """The folder served, or each network's as NAME=DIR."""
    if len(folders) == 1 and folders[0].name == DEFAULT_NETWORK:
        return str(folders[0].data_dir)
    return " ".join(f"{folder.name}={folder.data_dir}" for folder in folders)
