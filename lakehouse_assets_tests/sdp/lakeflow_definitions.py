"""The Lakeflow test pipeline as a code location, for tests that materialize it in a child
process (``SHOP_LANDING`` and ``SHOP_EXPORT`` name where its files are)."""

from pathlib import Path

from lakehouse_assets.lib import load_spark_pipeline

defs = load_spark_pipeline(Path(__file__).parent / "lakeflow_pipeline" / "spark-pipeline.yml")
