"""The live state: what is served, held in memory and kept fresh. No aiohttp."""
