"""Loading a crawl: the loader process and its client, and what a load makes of a crawl
file (every body of the snapshot, the catalog, the breakdowns, archived snapshots)."""
