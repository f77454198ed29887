"""The live check of one node (``POST /api/v1/checknode/``): its wire format, its
handshake, which targets it may reach, its bounds and its hand-off to the bitnodes bridge.
Nothing here knows of HTTP."""
