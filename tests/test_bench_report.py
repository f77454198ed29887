"""BENCHMARKS.md names the code it measured: the commit, and whether the tree had changes
to the service or the benchmark beside it, read from a real git checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.report import measured_code


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.org", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_a_folder_that_is_no_checkout_says_so(tmp_path):
    assert measured_code(tmp_path) == "not a git checkout"


def test_the_commit_and_changes_beside_it_are_named(tmp_path):
    (tmp_path / "crawldash").mkdir()
    served = tmp_path / "crawldash" / "app.py"
    served.write_text("one = 1\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "first")
    commit = git(tmp_path, "rev-parse", "--short", "HEAD")

    (tmp_path / "notes.txt").write_text("not code\n")  # untracked, outside the code
    assert measured_code(tmp_path) == f"commit {commit}"

    served.write_text("one = 2\n")
    assert measured_code(tmp_path) == f"commit {commit}, with uncommitted changes"
