"""One scale-out stack for the package: cluster, engine, S3-compatible server, PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lakehouse_assets.lib.ports import free_port
from lakehouse_assets.lib.spark.engine import Engine
from lakehouse_assets.tools.cluster import StandaloneCluster
from lakehouse_assets.tools.postgres import PostgresServer
from lakehouse_assets.tools.s3server import S3Server
from lakehouse_assets_tests.scaleout.stack import Stack, environment, read_bucket_through


@pytest.fixture(scope="package")
def stack(postgres: PostgresServer, spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("scaleout")
    with S3Server(data=work / "s3") as s3, StandaloneCluster(cores=2, memory="2g") as cluster:
        with environment(s3.env()):
            read_bucket_through(spark)
            engine = Engine(free_port(), master=cluster.url, log=open(work / "engine.log", "ab")).start()
            stack = Stack(cluster, s3, postgres, engine, work)
            try:
                yield stack
            finally:
                stack.engine.stop()
