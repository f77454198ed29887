"""``crawldash demo``: a realistic data folder, as a crawler, its bridge and crawldash
leave it, made by a seeded generator of crawls, and served."""
