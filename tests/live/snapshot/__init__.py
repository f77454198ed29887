"""Unit tests of crawldash.live.snapshot, on crawls decoded in each test."""
