"""Development infrastructure for make targets, tests and benches: the local servers (Spark
Connect, a standalone cluster, Kafka, S3Proxy, PostgreSQL, ``dagster dev``), the one supervisor
they all start and stop through, and small helpers around them. Not part of the wheel: the
framework (:mod:`lakehouse_assets`) never imports it; make and the tests put the repository
root on ``PYTHONPATH``."""

from pathlib import Path

# The checkout these tools run in (devstack is never installed: it is always the checkout's own).
REPO_ROOT = Path(__file__).resolve().parents[1]
