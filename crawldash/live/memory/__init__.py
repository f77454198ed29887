"""What is kept of every crawl counted: the history, presence, their index files, and the
answers about one address or the changes between crawls that are built from them."""
