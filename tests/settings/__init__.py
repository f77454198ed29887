"""Unit tests of crawldash.settings: parsing and validating options."""
