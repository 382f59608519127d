"""The engine: runs one declared table on Spark and Delta. Knows nothing of Dagster."""
