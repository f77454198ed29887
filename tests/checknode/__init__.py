"""Unit tests of crawldash.checknode: its pure parts, no network peer."""
