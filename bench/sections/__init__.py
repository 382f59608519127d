"""The benchmark sections, one module each (``bench/run.py`` orders them)."""
