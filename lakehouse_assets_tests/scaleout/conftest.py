"""One scale-out stack for the package: cluster, engine, S3-compatible server, PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devstack.cluster import StandaloneCluster
from devstack.environment import environment
from devstack.postgres import PostgresServer
from devstack.s3server import S3Server
from lakehouse_assets_tests.scaleout.stack import Stack, read_bucket_through


@pytest.fixture(scope="package")
def stack(postgres: PostgresServer, spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("scaleout")
    with S3Server(data=work / "s3") as s3, StandaloneCluster(cores=2, memory="2g") as cluster:
        with environment(s3.env()):
            read_bucket_through(spark)
            stack = Stack(cluster, s3, postgres, None, work)  # type: ignore[arg-type] - set just below
            stack.new_engine()
            try:
                yield stack
            finally:
                stack.engine.stop()
