"""Benchmarks: `make bench` runs bench/run.py and writes bench/results.md."""
