"""The shape of a served crawl: what a load makes of it (its bodies, its nodes as
columns, its breakdowns) and older crawls served whole."""
