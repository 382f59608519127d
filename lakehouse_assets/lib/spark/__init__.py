"""Spark set-up: the session and its settings, Delta's jars, the driver's class archive."""
