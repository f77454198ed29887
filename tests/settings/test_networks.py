"""settings/networks.py: the networks one crawldash serves, with what the options give
each, and a clear error for an option that names a network not served."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawldash.settings.networks import DEFAULT_NETWORK, NetworkFolder
from crawldash.settings.serve import Settings


def test_data_dir_alone_is_the_main_network():
    (folder,) = Settings(data_dir=Path("/d/f9beb4d9")).folders
    assert folder == NetworkFolder(
        DEFAULT_NETWORK, Path("/d/f9beb4d9"), magic=bytes.fromhex("f9beb4d9")
    )


def test_unnamed_values_go_to_the_first_network_named_ones_to_theirs():
    settings = Settings(
        networks=(("a", Path("/d/a")), ("b", Path("/d/b"))),
        status_file=((None, Path("/s/a.json")), ("b", Path("/s/b.json"))),
        watches=((None, "198.51.100.1:8333"), ("b", "198.51.100.2:8333")),
    )
    a, b = settings.folders
    assert (a.status_file, b.status_file) == (Path("/s/a.json"), Path("/s/b.json"))
    assert (a.watches, b.watches) == (("198.51.100.1:8333",), ("198.51.100.2:8333",))
    assert (a.magic, b.live_check) == (None, False)


def test_live_check_needs_a_known_magic():
    named = (("main", Path("/d/f9beb4d9")), ("sig", Path("/d/sig")))
    settings = Settings(networks=named, live_check=("*",), live_check_magic=(("sig", "0a03cf40"),))
    assert [(f.live_check, f.magic) for f in settings.folders] == [
        (True, bytes.fromhex("f9beb4d9")),
        (True, bytes.fromhex("0a03cf40")),
    ]
    with pytest.raises(ValueError, match=r"--live-check sig: .*--live-check-magic sig=f9beb4d9"):
        _ = Settings(networks=named, live_check=("sig",)).folders


@pytest.mark.parametrize(
    ("options", "flag"),
    [
        ({"crawl_dir": (("nope", Path("/c")),)}, "--network-crawl-dir"),
        ({"live_check": ("nope",)}, "--live-check"),
        ({"live_check_magic": (("nope", "f9beb4d9"),)}, "--live-check-magic"),
    ],
)
def test_an_option_naming_a_network_not_served_is_an_error(options: dict[str, object], flag: str):
    with pytest.raises(ValueError, match=f"{flag} names no network served: nope"):
        _ = Settings(**options).folders  # type: ignore[arg-type]
