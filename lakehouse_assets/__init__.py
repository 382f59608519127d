"""lakehouse_assets: declarative streaming Delta tables as Dagster assets."""

import os

# A Spark Connect engine's Python workers (they run micro-batches) import the framework through
# this package; they need neither Dagster nor the demo's code location (about 0.5 s each), and
# lakehouse_assets.lib.spark.engine launches them with this variable set.
if not os.environ.get("LAKEHOUSE_ENGINE_WORKER"):
    from lakehouse_assets.definitions import defs

    __all__ = ["defs"]
