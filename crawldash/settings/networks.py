"""The networks one crawldash serves, each with what the options give it: its crawler's
folder, status file, propagation folder, crawl folder and watched nodes. ``--network``
names the networks; each per-network option (``--status-file``, ...) is given for the first
network as ``--X VALUE`` and for any as ``--network-X NAME=VALUE`` (``settings/options.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .checking import EVERY_NETWORK
from .options import PerNetwork, options_of

if TYPE_CHECKING:
    from .serve import Settings

V = TypeVar("V")

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
    live_check: bool = False  # --live-check names it, or is given alone
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
    served = [name for name, _ in named]
    checked = served if EVERY_NETWORK in settings.live_check else settings.live_check
    _check_names(settings, set(served))
    first = served[0]
    magics = {name: _magic(name, path, settings.live_check_magic) for name, path in named}
    for name in checked:
        if magics.get(name) is None:
            raise ValueError(
                f"--live-check {name}: its data folder is not named after a known magic; "
                f"give --live-check-magic {name}=f9beb4d9 (its message start)"
            )
    status_files = _one_each(settings.status_file, first)
    propagation = _one_each(settings.propagation_dir, first)
    crawl_dirs = _one_each(settings.crawl_dir, first)
    handoffs = _one_each(settings.check_handoff_dir, first)
    watches: dict[str, list[str]] = {}
    for network, address in settings.watches:
        watches.setdefault(network or first, []).append(address)
    return tuple(
        NetworkFolder(
            name,
            path,
            status_files.get(name),
            propagation.get(name),
            crawl_dirs.get(name),
            tuple(watches.get(name, ())),
            name in checked,
            magics[name],
            handoffs.get(name),
        )
        for name, path in named
    )


def _check_names(settings: Settings, served: set[str]) -> None:
    """A ValueError for an option that names a network not served."""
    naming: list[tuple[str, PerNetwork[object]]] = [
        (described.forms()[1].flag, getattr(settings, option))
        for option, described in options_of(type(settings))
        if described.per_network
    ]
    naming.append(("--live-check", tuple((name, name) for name in settings.live_check)))
    naming.append(("--live-check-magic", settings.live_check_magic))
    for flag, given in naming:
        unknown = {name for name, _ in given if name is not None} - served - {EVERY_NETWORK}
        if unknown:
            raise ValueError(f"{flag} names no network served: {', '.join(sorted(unknown))}")


def _magic(name: str, data_dir: Path, given: tuple[tuple[str, str], ...]) -> bytes | None:
    """A network's message start: ``--live-check-magic``'s, else its data folder's name
    if that is a known one (bitnodes' ``data/export/f9beb4d9``)."""
    chosen = dict(given).get(name) or data_dir.name.lower()
    return bytes.fromhex(chosen) if chosen in KNOWN_MAGICS or name in dict(given) else None


def _one_each(given: PerNetwork[V], first: str) -> dict[str, V]:
    """Each network's value of one per-network option: its own by name (``--network-X``),
    else, for the first network, the one given without a name (``--X``)."""
    chosen = {name: value for name, value in given if name is not None}
    for name, value in given:
        if name is None:
            chosen.setdefault(first, value)
    return chosen
