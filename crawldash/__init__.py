"""crawldash: a read-only JSON service for the output of a peer-to-peer network crawler."""

__version__ = "0.1.0"
