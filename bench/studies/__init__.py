"""Studies run in a process of their own, so that the memory they add is their own."""
