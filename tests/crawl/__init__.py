"""Unit tests of crawldash.crawl: its modules called directly, no server or process."""
