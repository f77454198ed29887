"""The size budget of the project's code (Python modules and the page's scripts, whoever
wrote them but the vendored ones): a warning past WARN lines, a failure past FAIL.

Run by ``make lint`` on every folder it lints; exits 1 if any file is over FAIL. A file
over WARN is a place to split where the flow splits, not a reason to squeeze prose or
helpers.
"""

from __future__ import annotations

import sys
from pathlib import Path

WARN = 300
FAIL = 400
SUFFIXES = (".py", ".js")
VENDORED = "vendor"  # a folder of files shipped as their authors wrote them


def sizes(folder: Path) -> dict[Path, int]:
    """Lines of every Python module and script below ``folder``, but the vendored ones.

    Args:
        folder: a package's, or any folder of code.

    Returns:
        Each file's path with its number of lines.
    """
    return {
        path: len(path.read_text().splitlines())
        for path in sorted(folder.rglob("*"))
        if path.suffix in SUFFIXES and VENDORED not in path.relative_to(folder).parts
    }


def main(argv: list[str]) -> int:
    over = 0
    for folder in map(Path, argv or ["crawldash"]):
        over += report(folder)
    return 1 if over else 0


def report(folder: Path) -> int:
    """Print each file of ``folder`` over the budget's warning or limit; return how many
    are over the limit."""
    over = 0
    for path, lines in sizes(folder).items():
        if lines > FAIL:
            print(f"{path}: {lines} lines, over the limit of {FAIL}: split it")
            over += 1
        elif lines > WARN:
            print(f"{path}: {lines} lines, over {WARN}: consider splitting it")
    return over


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
