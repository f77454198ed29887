"""Unit tests of crawldash.live.stores."""
