"""The example project run by Spark's own ``spark-pipelines``, as a client of a Spark Connect
engine with Delta, on the datasets SDP can run here.

``silver_customers.py`` is left out: SDP 4.2's Auto CDC needs a target with row-level operations,
which Delta 4.4's tables lack (``AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE``), and it has no SCD
type 2. ``gold_countries.py`` reads ``customers``, so it goes too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from devstack import REPO_ROOT
from lakehouse_assets.lib.spark.engine_auth import client_environment
from verification.processes import run_bounded

EXAMPLE = REPO_ROOT / "examples" / "sdp_orders"
SDP_FILES = ("bronze.py", "silver_orders.py", "gold_revenue.py")
SDP_DATASETS = ("bronze_orders_eu", "bronze_orders_us", "bronze_customer_changes", "silver_orders", "customer_revenue")
SPARK_PIPELINES = Path(sys.executable).with_name("spark-pipelines")
# SDP's datasets go to a database of their own: the engine's default database names this
# project's tables (lib/engine/state/catalog.py), and the same names there would be the same tables.
SDP_DATABASE = "spark_pipelines"


def sdp_project(work: Path, landing: Path) -> Path:
    """A copy of the example holding only :data:`SDP_FILES`, its spec with the landing folder
    spelled out (SDP does not expand the environment) and storage under ``work``."""
    project = work / "sdp_project"
    (project / "transformations").mkdir(parents=True, exist_ok=True)
    for name in SDP_FILES:
        shutil.copy(EXAMPLE / "transformations" / name, project / "transformations" / name)
    spec = {
        "name": "sdp_orders",
        "storage": (work / "sdp_storage").as_uri(),
        "database": SDP_DATABASE,
        "configuration": {"orders.landing": str(landing), "spark.sql.sources.default": "delta"},
        "libraries": [{"glob": {"include": "transformations/**"}}],
    }
    (project / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    return project


def engine_conf(work: Path) -> dict[str, str]:
    """SDP's datasets are catalog tables: the engine keeps them in a warehouse under ``work``."""
    return {"spark.sql.warehouse.dir": str(work / "sdp_warehouse")}


def sdp_table_path(work: Path, dataset: str) -> Path:
    return work / "sdp_warehouse" / f"{SDP_DATABASE}.db" / dataset


def _client_env() -> dict[str, str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("SPARK_REMOTE", None)
    return env


def create_sdp_database(remote: str) -> None:
    """The database SDP's datasets go to, on the engine at ``remote`` (SDP does not create it)."""
    address, token = client_environment(remote)
    create = f"from pyspark.sql import SparkSession as S; S.builder.remote({address!r}).create().sql('CREATE SCHEMA IF NOT EXISTS {SDP_DATABASE}')"
    subprocess.run(
        [sys.executable, "-c", create], env=_client_env() | token, check=True, capture_output=True, timeout=300
    )


def run_spark_pipelines(project: Path, remote: str) -> tuple[float, str]:
    """``spark-pipelines run`` against the engine at ``remote``: (seconds, its output). PySpark's
    own tool gets the engine's token in the variable it reads, not on its command line."""
    address, token = client_environment(remote)
    env = _client_env() | token
    create_sdp_database(remote)
    command = [str(SPARK_PIPELINES), "run", "--spec", str(project / "spark-pipeline.yml"), "--remote", address]
    started = time.monotonic()
    done = run_bounded(command, cwd=project, env=env, timeout=600)
    seconds = time.monotonic() - started
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise AssertionError(f"spark-pipelines run failed ({done.returncode}):\n{output[-4000:]}")
    return seconds, output
