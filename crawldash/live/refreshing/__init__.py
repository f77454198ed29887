"""Keeping the state fresh: the watcher, the refresher it drives, the counting of older
crawls into the history, and the files that must not be served."""
