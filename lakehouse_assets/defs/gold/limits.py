"""How far behind what landed a gold table may be before its ``caught_up_with_landing`` check
warns: a file that landed longer ago than this and is not in the table yet."""

GOLD_CAUGHT_UP = "15 minutes"
