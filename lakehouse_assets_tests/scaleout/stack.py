"""The scale-out stack of the tests: a Spark standalone cluster, the Spark Connect engine on it,
an S3-compatible server and PostgreSQL, all real servers on 127.0.0.1, and the helpers that land
data into the bucket and compare it with a local reference run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from devstack.cluster import StandaloneCluster
from devstack.connect_server import ConnectServer
from devstack.ports import free_port
from devstack.postgres import PostgresServer, postgres_home
from devstack.s3server import S3Server
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.engine.state import storage
from lakehouse_assets.lib.engine.state.delta_log import delta_version
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.object_store import s3a_conf, s3a_secrets
from verification.crash import Outcome, materialize_in_child
from verification.reference import ALL_TABLES


@dataclass
class Stack:
    cluster: StandaloneCluster
    s3: S3Server
    postgres: PostgresServer
    engine: ConnectServer
    work: Path

    def new_engine(self, log_name: str = "engine.log") -> ConnectServer:
        """Another engine on the cluster (after the first was killed)."""
        with open(self.work / log_name, "ab") as log:  # the server keeps its own descriptor
            self.engine = ConnectServer(free_port(), master=self.cluster.url, log=log).start()
        return self.engine

    def instance_home(self, name: str) -> tuple[Path, dict[str, str]]:
        """A DAGSTER_HOME on its own Postgres database, and the variables that select it."""
        home = postgres_home(self.work / name / "dagster_home")
        return home, {"DAGSTER_HOME": str(home), "DAGSTER_PG_URL": self.postgres.create_database(name)}

    def materialize(self, name: str, root: str, env: dict[str, str], selection: str = "*") -> Outcome:
        """``dagster asset materialize --select <selection>`` as a client of the engine."""
        env = {**env, "LAKEHOUSE_ROOT": root, "SPARK_REMOTE": self.engine.url}
        return materialize_in_child(self.work / name, selection, env=env)


def land_round(root: str, reference: Path, options: GeneratorOptions, sources: list[str] | None = None) -> list[str]:
    """A generator batch into the bucket (``sources``: all by default), and the same files into
    the reference's landing zone."""
    written = [str(uri) for uri in generate(LakehousePaths(root), options, sources)]
    for uri in written:
        relative = uri.removeprefix(f"{root}/")
        target = reference / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(storage.read_bytes(uri) or b"")
    return written


def versions(root: str) -> dict[str, int | None]:
    """Every contract table's latest Delta version, from its log in the bucket."""
    paths = LakehousePaths(root)
    return {table: delta_version(paths.table(table)) for table in ALL_TABLES}


def read_bucket_through(spark: SparkSession) -> None:
    """Let the tests' own (embedded) session read the bucket: the s3a settings on its Hadoop
    configuration, which Delta's reads use (session settings do not reach it)."""
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in (s3a_conf(current()) | s3a_secrets(current())).items():
        hadoop.set(key.removeprefix("spark.hadoop."), value)
