"""How a crawl file is made: ``python -m bench.export_stats FILE...`` prints, for each
bitnodes export file, its rows and bytes, the shares of onion rows and of rows at 0.0, 0.0,
and how many distinct user agents, ASNs, countries and hostnames it lists, to compare the
benchmark's files (bench.export_shape) with a real export."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import msgspec


def describe(path: Path) -> str:
    """One file's counts, as a line of text."""
    body = path.read_bytes()
    rows = msgspec.json.decode(body, type=list[list[object]])
    count = len(rows)
    onion = sum(str(row[0]).endswith(".onion") for row in rows) / count
    zero = sum(row[10] == 0.0 and row[11] == 0.0 for row in rows) / count
    agents = Counter(row[3] for row in rows)
    hosts = [row[7] for row in rows if row[7]]
    clearnet = [row for row in rows if row[9]]
    return (
        f"{path.name}: {count:,} rows, {len(body):,} bytes ({len(body) / count:.0f} a row); "
        f"onion {onion:.1%}, at 0.0, 0.0 {zero:.1%}; {len(agents)} user agents (the most "
        f"common {agents.most_common(1)[0][1] / count:.1%}, the ten most common "
        f"{sum(n for _, n in agents.most_common(10)) / count:.1%}); "
        f"{len({row[13] for row in clearnet}):,} ASNs and {len({row[9] for row in clearnet})} "
        f"countries on {len(clearnet):,} clearnet rows; hostnames on {len(hosts):,} rows, "
        f"{len(set(hosts)):,} distinct"
    )


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(describe(Path(name)))
