"""The package's layout keeps its rules: one-way imports, handlers bound to what they use,
short modules, and one declaration per option, which the README's tables follow."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from crawldash import cli

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "crawldash"
sys.path.insert(0, str(ROOT / "scripts"))
import module_sizes  # noqa: E402  (the size budget that make lint applies)


def test_import_contracts_are_kept():
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint_imports is not None, "import-linter is a development dependency"
    run = subprocess.run([lint_imports], cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    with (ROOT / "pyproject.toml").open("rb") as file:
        contracts = tomllib.load(file)["tool"]["importlinter"]["contracts"]
    assert f"{len(contracts)} kept, 0 broken" in run.stdout


@pytest.mark.parametrize("folder", ["web", "ops"])
def test_no_handler_looks_up_an_app_key(folder: str):
    """Handlers get their collaborators when create_app builds them, not from request.app."""
    for path in (PACKAGE / folder).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("app", "config_dict"):
                value = node.value
                assert not (isinstance(value, ast.Name) and value.id == "request"), (
                    f"{path.name}:{node.lineno} looks up request.{node.attr}"
                )


def test_no_file_of_code_is_over_the_size_budget():
    """Every folder ``make lint`` budgets: the package (its page's scripts too), the tests,
    the examples, the benchmarks and the scripts."""
    over = {
        str(path): lines
        for folder in ("crawldash", "tests", "examples", "bench", "scripts")
        for path, lines in module_sizes.sizes(ROOT / folder).items()
        if lines > module_sizes.FAIL
    }
    assert not over


def test_the_size_budget_fails_a_long_module_and_warns_of_a_longish_one(tmp_path, capsys):
    (tmp_path / "short.py").write_text("x = 1\n" * module_sizes.WARN)
    (tmp_path / "longish.py").write_text("x = 1\n" * (module_sizes.WARN + 1))
    assert module_sizes.main([str(tmp_path)]) == 0
    assert "longish.py: 301 lines, over 300" in capsys.readouterr().out
    (tmp_path / "long.py").write_text("x = 1\n" * (module_sizes.FAIL + 1))
    assert module_sizes.main([str(tmp_path)]) == 1
    assert "long.py: 401 lines, over the limit of 400" in capsys.readouterr().out
    (tmp_path / "long.py").unlink()
    other = tmp_path / "other"
    (other / "vendor").mkdir(parents=True)
    (other / "vendor" / "theirs.min.js").write_text("x;\n" * (module_sizes.FAIL + 1))
    assert module_sizes.main([str(tmp_path), str(other)]) == 0  # vendored: as shipped
    (other / "page.js").write_text("x;\n" * (module_sizes.FAIL + 1))
    assert module_sizes.main([str(tmp_path), str(other)]) == 1  # a script, in any folder
    assert "page.js: 401 lines, over the limit of 400" in capsys.readouterr().out


def test_nosniff_is_set_in_one_place():
    setting = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "nosniff" in path.read_text()
    ]
    assert setting == ["web/responses.py"]


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_every_option_has_help(command: str):
    parser = cli.build_parser()
    subcommands = next(a for a in parser._actions if a.dest == "command")
    sub = subcommands.choices[command]  # type: ignore[index]
    for action in sub._actions:
        if action.dest != "help":
            assert action.help, action.option_strings
            assert not action.help.startswith(" ["), action.option_strings


def test_make_demo_and_install_take_the_runtime_alone():
    for target in ("install", "demo"):
        plan = subprocess.run(
            ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        assert "'.[bitnodes]'" in plan, plan
        assert "'.[dev]'" not in plan, plan


def test_make_serve_without_a_folder_says_how_to_give_one_before_building(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    run = subprocess.run(["make", "serve"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode != 0
    assert "make serve DATA_DIR=/path/to/folder" in run.stderr
    assert not (tmp_path / ".venv").exists(), "nothing is built before the folder is checked"


def test_make_serve_of_a_folder_not_there_yet_serves_it_as_crawldash_serve_does(tmp_path):
    """One behaviour for a data folder that does not exist: crawldash serve waits for it
    (docs/operating.md), so make serve runs crawldash serve on it rather than refusing.
    The virtualenv is one already built, whose python says what it was asked to run."""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "pyproject.toml").touch()
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "asked"}\n')
    python.chmod(0o755)
    built = tmp_path / ".venv" / ".runtime"
    built.touch()
    os.utime(built, (time.time() + 60, time.time() + 60))  # newer than pyproject.toml
    run = subprocess.run(
        ["make", "serve", "DATA_DIR=/nonexistent/folder"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    asked = (tmp_path / "asked").read_text().split()
    assert asked == [
        "-m",
        "crawldash",
        "serve",
        "--data-dir",
        "/nonexistent/folder",
        "--port",
        "8080",
    ]
