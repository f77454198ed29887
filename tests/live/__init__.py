"""Unit tests of crawldash.live: its stores and answers called directly."""
