"""Every crawl kept for good: a Hive-partitioned Parquet archive (``network=NAME/
date=YYYY-MM-DD/``) written as crawls arrive, compacted per complete day, and read back to
serve crawls whose JSON files were pruned (docs/archive.md).

Only ``parquet.py`` (and what calls it) needs pyarrow, the ``crawldash[archive]`` extra; the
server process itself reads only names and small manifests.
"""

# What the loader process imports at its start, with an archive: a pruned crawl's first
# answer does not wait for pyarrow's import, and the loads that archive fork with it.
LOADER_PRELOAD = (
    "crawldash.archive.parquet",
    "crawldash.archive.writing",
    "crawldash.archive.warm",
)
