"""The size budget of the package's modules: a warning past WARN lines, a failure past FAIL.

Run by ``make lint``; exits 1 if any module is over FAIL. A module over WARN is a place to
split where the flow splits, not a reason to squeeze prose or helpers.
"""

from __future__ import annotations

import sys
from pathlib import Path

WARN = 300
FAIL = 400


def sizes(package: Path) -> dict[Path, int]:
    """Lines of every Python module below ``package``.

    Args:
        package: the package's folder.

    Returns:
        Each module's path with its number of lines.
    """
    return {path: len(path.read_text().splitlines()) for path in sorted(package.rglob("*.py"))}


def main(argv: list[str]) -> int:
    package = Path(argv[0]) if argv else Path("crawldash")
    over = 0
    for path, lines in sizes(package).items():
        if lines > FAIL:
            print(f"{path}: {lines} lines, over the limit of {FAIL}: split it")
            over += 1
        elif lines > WARN:
            print(f"{path}: {lines} lines, over {WARN}: consider splitting it")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
