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
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """The package's S3-compatible server (S3Proxy); its variables are set while the package runs,
    so settings read in this process (and the processes it starts) point at it."""
    with S3Server(data=tmp_path_factory.mktemp("s3")) as server, environment(server.env()):
        yield server


@pytest.fixture(scope="package")
def stack(postgres: PostgresServer, spark, s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("scaleout")
    with StandaloneCluster(cores=2, memory="2g") as cluster:
        read_bucket_through(spark)
        stack = Stack(cluster, s3, postgres, None, work)  # type: ignore[arg-type] - set just below
        stack.new_engine()
        try:
            yield stack
        finally:
            stack.engine.stop()
