"""Operating crawldash: health, metrics, logging and worker processes."""
