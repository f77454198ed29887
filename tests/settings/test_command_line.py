"""settings/command_line.py: settings from flags, else the environment, else the default,
a bad value one line that names the flag or the variable; parsed here, nothing started."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawldash.settings.archive import ArchiveSettings
from crawldash.settings.bridge import BridgeSettings
from crawldash.settings.command_line import Parser, UsageError, add_options, settings_from
from crawldash.settings.serve import Settings


def serve(*args: str) -> Settings:
    parser = Parser(prog="crawldash serve")
    add_options(parser, Settings)
    return settings_from(Settings, parser.parse_args(list(args)))


def test_defaults_come_from_the_table(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CRAWLDASH_PORT", raising=False)
    settings = serve()
    assert (settings.port, settings.max_file_size, settings.live_check) == (8080, 256 * 1024**2, ())


def test_a_flag_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CRAWLDASH_PORT", "9001")
    assert serve().port == 9001
    assert serve("--port", "9002").port == 9002


def test_toggles_lists_and_bare_flags():
    settings = serve(
        "--allow-empty-crawls", "--cors-origin", "a", "--cors-origin", "b,c", "--live-check"
    )
    assert settings.allow_empty_crawls is True
    assert settings.cors_origins == ("a", "b", "c")
    assert settings.live_check == ("*",)
    assert serve("--no-allow-empty-crawls").allow_empty_crawls is False


def test_per_network_values_are_joined_from_both_forms(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CRAWLDASH_NETWORK_STATUS_FILES", "b=/s/b.json")
    settings = serve("--network", "a=/d/a,b=/d/b", "--status-file", "/s/a.json")
    assert settings.status_file == ((None, Path("/s/a.json")), ("b", Path("/s/b.json")))
    folders = {folder.name: folder.status_file for folder in settings.folders}
    assert folders == {"a": Path("/s/a.json"), "b": Path("/s/b.json")}


def test_a_bad_flag_value_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as ended:
        serve("--port", "0")
    assert ended.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "--port" in error
    assert "0 is outside 1-65535" in error


def test_a_bad_variable_names_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CRAWLDASH_MAX_FILE_SIZE", "huge")
    with pytest.raises(UsageError, match="CRAWLDASH_MAX_FILE_SIZE='huge': 'huge' is not a size"):
        serve()


def test_a_bad_list_value_names_the_flag():
    with pytest.raises(UsageError, match="--trusted-proxy: 'proxy' is not an address range"):
        serve("--trusted-proxy", "proxy")


def test_a_required_option_says_so(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CRAWLDASH_DATA_DIR", raising=False)
    parser = Parser(prog="crawldash archive")
    add_options(parser, ArchiveSettings)
    with pytest.raises(UsageError, match="--data-dir is required \\(or set CRAWLDASH_DATA_DIR\\)"):
        settings_from(ArchiveSettings, parser.parse_args([]))


def test_skipped_options_are_neither_flags_nor_read(tmp_path: Path):
    parser = Parser(prog="crawldash bitnodes-status")
    add_options(parser, BridgeSettings, skip=["out"])
    with pytest.raises(SystemExit):
        parser.parse_args(["--out", str(tmp_path / "s.json")])
    settings = settings_from(BridgeSettings, parser.parse_args([]), skip=["out"])
    assert settings.out is None
