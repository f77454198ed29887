"""crawldash: a read-only JSON service for the output of a peer-to-peer network crawler."""

from importlib.metadata import PackageNotFoundError, version

try:
    # The one version is pyproject.toml's, as installed: `crawldash --version`, the start-up
    # line, /metrics and the OpenAPI document all say this.
    __version__ = version("crawldash")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
