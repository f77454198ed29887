"""What the command line takes, run as an operator runs it: each per-network option in
both its forms (flag and variable), ``--live-check`` given alone, and a data folder that
is not there yet."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crawldash import cli
from crawldash.settings.command_line import settings_from
from crawldash.settings.serve import Settings

from .factories import export_body, rows, write_snapshot, write_status
from .helpers import answer, fetch, get
from .process import free_port, served_whole, serving, wait_until, watching

TS = 1_700_000_000
# Each per-network option: its flag, its variable and a value of it.
PER_NETWORK = {
    "status_file": ("--status-file", "CRAWLDASH_STATUS_FILE", "/s/status.json"),
    "propagation_dir": ("--propagation-dir", "CRAWLDASH_PROPAGATION_DIR", "/s/kept"),
    "crawl_dir": ("--crawl-dir", "CRAWLDASH_CRAWL_DIR", "/s/crawl"),
    "watches": ("--watch", "CRAWLDASH_WATCH", "203.0.113.7:8333"),
    "check_handoff_dir": ("--check-handoff-dir", "CRAWLDASH_CHECK_HANDOFF_DIR", "/s/checks"),
}
NAMED_VARIABLES = {
    "status_file": "CRAWLDASH_NETWORK_STATUS_FILES",
    "propagation_dir": "CRAWLDASH_NETWORK_PROPAGATION_DIRS",
    "crawl_dir": "CRAWLDASH_NETWORK_CRAWL_DIRS",
    "watches": "CRAWLDASH_NETWORK_WATCHES",
    "check_handoff_dir": "CRAWLDASH_NETWORK_CHECK_HANDOFF_DIRS",
}
FOLDER_FIELD = {"check_handoff_dir": "handoff_dir"}


def crawldash(
    *arguments: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crawldash", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_each_per_network_option_is_one_row_naming_both_forms():
    """Declared once: `crawldash options serve` (docs/operating.md's table) shows each
    per-network option in one row, with the first network's form and any network's."""
    table = crawldash("options", "serve").stdout.splitlines()
    for name, (flag, variable, _) in PER_NETWORK.items():
        named = "--network-" + flag.removeprefix("--")
        (line,) = [line for line in table if f"`{named}`" in line]
        assert line.startswith(f"| `{flag}`, `{named}` | `{variable}`, `{NAMED_VARIABLES[name]}` |")


def folder_value(name: str, value: str) -> object:
    return (value,) if name == "watches" else Path(value)


@pytest.mark.parametrize("how", ["flags", "variables"])
@pytest.mark.parametrize("name", list(PER_NETWORK))
def test_each_form_reaches_its_network(monkeypatch, name: str, how: str):
    """``--X VALUE`` is the first network's, ``--network-X NAME=VALUE`` any network's, and
    so are their variables; every one an operator used before still works."""
    flag, variable, value = PER_NETWORK[name]
    other = value.replace("s", "t", 1) if name != "watches" else "203.0.113.8:8333"
    arguments = ["serve", "--network", "a=/a", "--network", "b=/b"]
    if how == "flags":
        arguments += [flag, value, "--network-" + flag.removeprefix("--"), f"b={other}"]
    else:
        monkeypatch.setenv(variable, value)
        monkeypatch.setenv(NAMED_VARIABLES[name], f"b={other}")
    settings = settings_from(Settings, cli.build_parser().parse_args(arguments))
    first, second = settings.folders
    field = FOLDER_FIELD.get(name, name)
    assert getattr(first, field) == folder_value(name, value)
    assert getattr(second, field) == folder_value(name, other)


def test_both_forms_and_variables_in_a_real_serve(tmp_path: Path):
    """A real process: the first network's status file by flag, the second's by variable;
    a watched node of each, one by `--watch`, one by `--network-watch`."""
    folders = {name: tmp_path / name for name in ("a", "b")}
    for index, folder in enumerate(folders.values()):
        write_snapshot(folder, TS, export_body(rows(3, first_octet=198 + index)))
    status_a = write_status(tmp_path, state="starting").rename(tmp_path / "a-status.json")
    status_b = write_status(tmp_path, state="stopped").rename(tmp_path / "b-status.json")
    options = [f"--network={name}={folder}" for name, folder in folders.items()]
    options += ["--status-file", str(status_a), "--watch", "198.0.0.1:8333"]
    options += ["--network-watch", "b=199.0.0.2:8333"]
    env = {"CRAWLDASH_NETWORK_STATUS_FILES": f"b={status_b}"}
    with serving(None, tmp_path / "state", *options, env=env) as base:
        assert get(f"{base}/n/a/api/status")["state"] == "starting"
        assert get(f"{base}/n/b/api/status")["state"] == "stopped"
        wait_until(lambda: served_whole(f"{base}/n/b", TS))
        metrics = fetch(f"{base}/metrics")[2].decode()
    up = [line for line in metrics.splitlines() if line.startswith("crawldash_node_up{")]
    assert any('network="a"' in line and "198.0.0.1:8333" in line for line in up), up
    assert any('network="b"' in line and "199.0.0.2:8333" in line for line in up), up
    assert not any('network="a"' in line and "199.0.0.2" in line for line in up), up


def magic_folders(tmp_path: Path) -> dict[str, Path]:
    """Two networks' data folders named after their magics, as bitnodes names them."""
    folders = {"mainnet": tmp_path / "m" / "f9beb4d9", "testnet4": tmp_path / "t" / "1c163f28"}
    for folder in folders.values():
        write_snapshot(folder, TS, export_body(rows(3)))
    return folders


def live_checked(base: str) -> dict[str, bool]:
    return {row["name"]: row["live_check"] for row in get(f"{base}/api/networks")["networks"]}


@pytest.mark.parametrize(
    ("given", "env", "checked"),
    [
        (["--live-check"], {}, {"mainnet": True, "testnet4": True}),
        (["--live-check", "--log-level", "info"], {}, {"mainnet": True, "testnet4": True}),
        ([], {"CRAWLDASH_LIVE_CHECK": "*"}, {"mainnet": True, "testnet4": True}),
        (["--live-check", "testnet4"], {}, {"mainnet": False, "testnet4": True}),
    ],
    ids=["alone", "alone-before-another-flag", "variable-star", "named"],
)
def test_live_check_alone_means_every_network(
    tmp_path: Path, given: list[str], env: dict[str, str], checked: dict[str, bool]
):
    options = [f"--network={name}={folder}" for name, folder in magic_folders(tmp_path).items()]
    with serving(None, tmp_path / "state", *options, *given, env=env) as base:
        assert live_checked(base) == checked


def test_live_check_alone_names_a_network_it_cannot_check(tmp_path: Path):
    """Every network means each must have a known magic: one line names the one without."""
    folder = tmp_path / "data"
    write_snapshot(folder, TS, export_body(rows(3)))
    run = crawldash(
        "serve", "--data-dir", str(folder), "--state-dir", str(tmp_path / "s"), "--live-check"
    )
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "crawldash serve: error: --live-check main: its data folder is not named after a known "
        "magic; give --live-check-magic main=f9beb4d9 (its message start)"
    ]


def test_help_says_a_data_folder_not_there_yet_is_waited_for():
    said = " ".join(crawldash("serve", "--help").stdout.split())
    assert "a folder that does not exist (yet) is not an error: it is waited for" in said


def test_a_data_folder_not_there_yet_is_waited_for_then_served(tmp_path: Path):
    """The behaviour --help and docs/operating.md promise (as bitnodes makes its export
    folder only at its first export): serving starts, says so once, and serves the folder
    once it appears."""
    later = tmp_path / "later"
    logs: list[str] = []
    with serving(later, tmp_path / "state", logs=logs) as base:
        status, ready = answer(f"{base}/readyz")
        assert (status, ready["error"]["code"]) == (503, "no_data_dir")
        write_snapshot(later, TS, export_body(rows(4)))
        wait_until(lambda: served_whole(base, TS))
        wait_until(lambda: watching(base))
        assert get(f"{base}/api/snapshot")["total_nodes"] == 4
    waiting = [line for line in logs[0].splitlines() if "waiting for it" in line]
    assert len(waiting) == 1, logs[0]
    assert "WARNING" in waiting[0]


def test_demo_says_in_one_line_that_it_serves_no_such_network(tmp_path: Path):
    """The demo takes the per-network options' both forms, and checks the names as serve
    does, before it serves."""
    small = ["--dir", str(tmp_path), "--nodes", "10", "--days", "1", "--port", str(free_port())]
    run = crawldash("demo", *small, "--network-watch", "nope=1.2.3.4:8333")
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().splitlines()[-1] == (
        "crawldash demo: error: --network-watch names no network served: nope"
    )
    assert "Traceback" not in run.stderr
