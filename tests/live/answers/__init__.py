"""Unit tests of crawldash.live.answers, built from small stores made in each test."""
