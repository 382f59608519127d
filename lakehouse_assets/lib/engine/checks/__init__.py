"""Evaluating the checks a table declares."""
