"""What is kept of every crawl counted: the history, which addresses each crawl had (the
presence), each crawl's counts by value, and their index files on disk."""
