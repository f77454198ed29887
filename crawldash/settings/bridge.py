"""The settings table of ``crawldash bitnodes-status``, the bridge from bitnodes' Redis
(the other commands' are in ``settings/serve.py``, declared the same way)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .options import file_in_a_folder, log_level, option, seconds, whole_number


@dataclass(frozen=True)
class BridgeSettings:
    """``crawldash bitnodes-status``: bitnodes' crawler status from Redis to status.json."""

    redis: str = option(
        "redis://localhost:6379/0",
        "bitnodes' Redis, as a URL; bitnodes' own `REDIS_SOCKET` and `REDIS_PASSWORD` "
        "variables are honoured as bitnodes reads them",
        env="CRAWLDASH_REDIS_URL",
    )
    redis_password_file: Path | None = option(
        None, "a file holding Redis' password (wins over any other)", Path
    )
    out: Path | None = option(
        None,
        "the status file to write, in an existing folder where no crawler tool globs "
        "`*.json` (crawldash serve reads it with --status-file)",
        file_in_a_folder,
        shown="required",
        env="CRAWLDASH_STATUS_OUT",
        required=True,
    )
    interval: float = option(
        10.0,
        "seconds between reads",
        seconds(0.1, 86400),
        shown="`10`",
        env="CRAWLDASH_BRIDGE_INTERVAL",
    )
    propagation_dir: Path | None = option(
        None,
        "where block propagation and node latency read from Redis are kept (made if "
        "missing); use a folder that survives reboots, outside bitnodes' folders",
        Path,
        shown="`propagation/` beside `--out`",
    )
    propagation_interval: float = option(
        60.0,
        "seconds between reads of `binv:*`, `rtt:*` and `opendata`",
        seconds(0.1, 86400),
        shown="`60`",
    )
    keep_days: int = option(
        60,
        "days a block's propagation is kept (node latency: at most the 30 days it shows)",
        whole_number(1, 3650),
        env="CRAWLDASH_PROPAGATION_KEEP_DAYS",
    )
    max_blocks: int = option(
        20_000,
        "blocks kept at most, the newest",
        whole_number(1, 1_000_000),
        env="CRAWLDASH_PROPAGATION_MAX_BLOCKS",
    )
    check_handoff_dir: Path | None = option(
        None,
        "the folder where crawldash serve leaves successful live checks "
        "(its `--check-handoff-dir`): each is added to bitnodes' `check` set, then removed",
        Path,
        shown="none",
    )
    check_handoff_interval: float = option(
        5.0,
        "seconds between looks at `--check-handoff-dir`",
        seconds(0.1, 86400),
        shown="`5`",
    )
    log_level: str = option("info", "`debug`, `info`, `warning` or `error`", log_level)

    @property
    def resolved_propagation_dir(self) -> Path:
        if self.propagation_dir is not None:
            return self.propagation_dir
        assert self.out is not None  # required
        return self.out.parent / "propagation"
