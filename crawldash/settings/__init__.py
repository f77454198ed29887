"""Every command's settings: how an option is declared (``options``), the
tables of ``serve`` and ``demo`` (``serve``) and of ``bitnodes-status`` (``bridge``)."""
