"""The networks one crawldash serves, each with what the options give it: its crawler's
folder, status file, propagation folder, crawl folder and watched nodes. ``--network``,
``--network-status-file`` and the other ``--network-*`` options name a network; the
options without a network (``--data-dir``, ``--status-file``, ...) are the first's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .serve import Settings

DEFAULT_NETWORK = "main"  # the name of the one network --data-dir serves
# Bitcoin's message starts by network, as bitnodes names its data folders after them.
KNOWN_MAGICS = {
    "f9beb4d9": "mainnet",
    "0b110907": "testnet3",
    "1c163f28": "testnet4",
    "0a03cf40": "signet",
    "fabfb5da": "regtest",
}


@dataclass(frozen=True)
class NetworkFolder:
    """One network served: its name in ``/n/NAME/``, its crawler's folder and status file,
    the bridge's folder, bitnodes' crawl folder if given, and the nodes watched (as given:
    the command line checks they are addresses)."""

    name: str
    data_dir: Path
    status_file: Path | None = None
    propagation_dir: Path | None = None
    crawl_dir: Path | None = None
    watches: tuple[str, ...] = ()
    live_check: bool = False  # --live-check names it
    magic: bytes | None = None  # its message start, if known (needed by the live check)
    handoff_dir: Path | None = None  # where successful live checks are left for the bridge


def network_folders(settings: Settings) -> tuple[NetworkFolder, ...]:
    """The networks served, the first also at ``/``: ``--network``'s, else the one
    ``--data-dir`` names ``main``.

    Args:
        settings: the serve command's settings.

    Returns:
        Each network with its folders. Raises ValueError for an option that names a network
        not served.
    """
    named = settings.networks or ((DEFAULT_NETWORK, settings.data_dir),)
    served = {name for name, _ in named}
    for flag, given in (
        ("--network-status-file", settings.network_status_files),
        ("--network-propagation-dir", settings.network_propagation_dirs),
        ("--network-crawl-dir", settings.network_crawl_dirs),
        ("--network-watch", settings.network_watches),
        ("--network-check-handoff-dir", settings.network_check_handoff_dirs),
        ("--live-check", tuple((name, name) for name in settings.live_check)),
        ("--live-check-magic", settings.live_check_magic),
    ):
        unknown = sorted({name for name, _ in given} - served)
        if unknown:
            raise ValueError(f"{flag} names no network served: {', '.join(unknown)}")
    first = named[0][0]
    status_files = _with_first(settings.network_status_files, first, settings.status_file)
    propagation = _with_first(settings.network_propagation_dirs, first, settings.propagation_dir)
    crawl_dirs = _with_first(settings.network_crawl_dirs, first, settings.crawl_dir)
    handoffs = _with_first(settings.network_check_handoff_dirs, first, settings.check_handoff_dir)
    magics = {name: _magic(name, path, settings.live_check_magic) for name, path in named}
    for name in settings.live_check:
        if magics.get(name) is None:
            raise ValueError(
                f"--live-check {name}: its data folder is not named after a known magic; "
                f"give --live-check-magic {name}=f9beb4d9 (its message start)"
            )
    watches = {first: list(settings.watches)}
    for name, address in settings.network_watches:
        watches.setdefault(name, []).append(address)
    return tuple(
        NetworkFolder(
            name,
            path,
            status_files.get(name),
            propagation.get(name),
            crawl_dirs.get(name),
            tuple(watches.get(name, ())),
            name in settings.live_check,
            magics[name],
            handoffs.get(name),
        )
        for name, path in named
    )


def _magic(name: str, data_dir: Path, given: tuple[tuple[str, str], ...]) -> bytes | None:
    """A network's message start: ``--live-check-magic``'s, else its data folder's name
    if that is a known one (bitnodes' ``data/export/f9beb4d9``)."""
    chosen = dict(given).get(name) or data_dir.name.lower()
    return bytes.fromhex(chosen) if chosen in KNOWN_MAGICS or name in dict(given) else None


def _with_first(
    given: tuple[tuple[str, Path], ...], first: str, first_own: Path | None
) -> dict[str, Path]:
    """Each network's folder of one kind: its ``--network-X``, or ``--X`` for the first."""
    named = dict(given)
    if first_own is not None:
        named.setdefault(first, first_own)
    return named
