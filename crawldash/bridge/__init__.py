"""The bitnodes bridge (``crawldash bitnodes-status``), a program of its own beside the
service, run as bitnodes' user: it alone talks to bitnodes' Redis, and leaves what serve
reads in files (the status, block propagation and latency, each crawl's attempts), and
hands successful live checks to bitnodes' ``check`` set."""
