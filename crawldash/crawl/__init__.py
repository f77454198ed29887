"""Data in: the crawler's files on disk, listed, read and decoded. Blocking; no aiohttp."""
