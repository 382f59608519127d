"""Silver: clean, typed, deduplicated tables."""
