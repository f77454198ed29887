"""Commands beside the service: the demo folder generator and the bitnodes status bridge."""
