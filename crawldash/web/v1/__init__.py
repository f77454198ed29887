"""The bitnodes.io API v1 routes a crawler's files and its kept propagation can answer."""
