"""The command line, and crawldash as a real process over a real socket."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crawldash import cli
from crawldash.settings.command_line import settings_from
from crawldash.settings.serve import Settings
from crawldash.web import server

from .factories import export_body, rows, write_snapshot, write_status
from .helpers import answer
from .process import served_whole, serving, wait_until, watching

TS = 1_700_000_000


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["serve", "--port", "http"], "'http' is not a whole number"),
        (["serve", "--port", "70000"], "70000 is outside 1-65535"),
        (["serve", "--history-size", "0"], "outside"),
        (["serve", "--max-file-size", "lots"], "not a size"),
        (["serve", "--log-level", "loud"], "invalid choice"),
        (["serve", "--bogus"], "unrecognized arguments"),
        (["launch"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, argv: list[str], reason: str):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert reason in err


def test_environment_supplies_defaults(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("CRAWLDASH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CRAWLDASH_PORT", "9191")
    monkeypatch.setenv("CRAWLDASH_MAX_FILE_SIZE", "2M")
    monkeypatch.setenv("CRAWLDASH_STALE_AFTER", "60")
    settings = settings_from(Settings, cli.build_parser().parse_args(["serve"]))
    assert settings.data_dir == tmp_path
    assert settings.port == 9191
    assert settings.max_file_size == 2 * 1024 * 1024
    assert settings.stale_after == 60
    settings = settings_from(Settings, cli.build_parser().parse_args(["serve", "--port", "9292"]))
    assert settings.port == 9292  # the command line wins


def test_bad_environment_value_exits_2_naming_the_variable(monkeypatch, capsys):
    monkeypatch.setenv("CRAWLDASH_PORT", "eighty")
    assert cli.main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "CRAWLDASH_PORT='eighty': 'eighty' is not a whole number" in err
    assert "--port" not in err


def test_non_loopback_bind_warns(monkeypatch, caplog, tmp_path: Path):
    started: list[dict[str, Any]] = []
    monkeypatch.setattr(server, "run", lambda app, **kw: started.append(kw))
    for host in ("0.0.0.0", "127.0.0.1", "::1"):
        cli.serve(Settings(data_dir=tmp_path, state_dir=tmp_path / "s", host=host))
    warnings = [r.getMessage() for r in caplog.records if "no authentication" in r.getMessage()]
    assert len(warnings) == 1
    assert "0.0.0.0" in warnings[0]
    assert [kw["host"] for kw in started] == ["0.0.0.0", "127.0.0.1", "::1"]


def test_access_log_switch(monkeypatch):
    """Off unless asked for: /metrics counts every request anyway."""
    assert settings_from(Settings, cli.build_parser().parse_args(["serve"])).access_log is False
    args = cli.build_parser().parse_args(["serve", "--access-log"])
    assert settings_from(Settings, args).access_log is True
    monkeypatch.setenv("CRAWLDASH_ACCESS_LOG", "on")
    assert settings_from(Settings, cli.build_parser().parse_args(["serve"])).access_log is True
    args = cli.build_parser().parse_args(["serve", "--no-access-log"])
    assert settings_from(Settings, args).access_log is False  # the flag wins


def test_serve_as_a_real_process(tmp_path: Path):
    data_dir = tmp_path / "data"
    write_snapshot(data_dir, TS, export_body(rows(20)))
    write_status(data_dir, state="running")
    logs: list[str] = []
    with serving(data_dir, tmp_path / "state", logs=logs) as base:
        status, snapshot = answer(f"{base}/api/snapshot")
        assert status == 200
        assert snapshot["total_nodes"] == 20
        assert answer(f"{base}/api/status")[1]["state"] == "running"
        wait_until(lambda: watching(base))  # changes from now on are seen as they happen
        write_snapshot(data_dir, TS + 600, export_body(rows(25)))
        wait_until(lambda: served_whole(base, TS + 600))  # /api/check too, not only the body
        assert answer(f"{base}/api/snapshot")[1]["total_nodes"] == 25
        status, checked = answer(f"{base}/api/check?address=198.0.0.24:8333")
        assert (status, checked["reachable"]) == (200, True)
        status, error = answer(f"{base}/api/check?address=nope")
        assert (status, error["error"]["code"]) == (400, "invalid_address")
    assert "snapshot loaded" in logs[0]
    assert "change detected" not in logs[0]  # watchfiles' own lines: only at debug
