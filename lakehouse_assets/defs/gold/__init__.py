"""Gold: exact business answers, updated incrementally."""
