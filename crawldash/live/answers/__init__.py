"""Answers built on what the stores keep: about one address, the changes between crawls,
the history by value, distinct nodes, each node's changes, why a node is down, and block
propagation; each encoded once per change, not per request."""
