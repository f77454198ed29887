"""Run a command with every core kept busy: ``python -m bench.hog make test``.

The busy-cores scenario's spinners (one ``while True: pass`` per core, at nice 0, in a
session of their own) run for as long as the command does; ``make test-busy`` runs the
suite under them, so a test that holds only on an idle machine fails there first. Exits
with the command's own status."""

from __future__ import annotations

import subprocess
import sys

from bench.servers import spinners


def main(command: list[str]) -> int:
    if not command:
        print("usage: python -m bench.hog COMMAND [ARGUMENT ...]", file=sys.stderr)
        return 2
    with spinners() as pids:
        print(f"bench.hog: {len(pids)} busy processes beside: {' '.join(command)}", flush=True)
        return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
