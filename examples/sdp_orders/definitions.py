"""The example pipeline as Dagster definitions: one asset per dataset."""

from pathlib import Path

from lakehouse_assets.lib import load_spark_pipeline

defs = load_spark_pipeline(Path(__file__).parent / "spark-pipeline.yml")
