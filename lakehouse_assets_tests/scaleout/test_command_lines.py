"""What ``ps`` shows any user during an embedded run whose executors are JVMs of their own
(``local-cluster``) on the bucket, while the stack's engine serves: no S3 key and no engine
token on any process's command line. The run reads and writes the bucket, so the credentials
reached its driver and executors some other way (a private file at launch)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.engine.state.delta_log import delta_row_count, delta_version
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.spark.engine_auth import token_file
from lakehouse_assets_tests.scaleout.stack import Stack
from verification.crash import materialize_in_child
from verification.processes import holding, processes_seen

pytestmark = pytest.mark.slow
START = datetime(2026, 11, 20, 6, tzinfo=UTC)
LOCAL_CLUSTER = "local-cluster[1,1,1024]"  # one executor JVM of 1 GB, started by the driver


def test_an_embedded_run_on_a_local_cluster_puts_no_secret_on_a_command_line(stack: Stack, tmp_path: Path) -> None:
    root = stack.s3.root("command-lines")
    paths = LakehousePaths(root)
    generate(paths, GeneratorOptions(files=1, rows=40, seed=5, start=START), ["events"])
    env = {"LAKEHOUSE_ROOT": root, "SPARK_MASTER": LOCAL_CLUSTER}
    assert stack.engine.running()
    with processes_seen() as seen:
        run = materialize_in_child(tmp_path, "bronze_events", env=env)
    assert run.returncode == 0, run.output[-3000:]
    version = delta_version(paths.table("bronze_events"))
    assert version is not None and (delta_row_count(paths.table("bronze_events"), 0, -1, version) or 0) > 0
    observed = [(pid, p) for pid, known in seen.items() for p in known]
    drivers = {pid for pid, p in observed if "SparkSubmit" in p.command and LOCAL_CLUSTER in p.command}
    executors = [p for _, p in observed if "CoarseGrainedExecutorBackend" in p.command and p.parent in drivers]
    assert executors, "the run's driver and an executor JVM of its own were never seen"
    secrets = [stack.s3.credential, stack.s3.identity, token_file().read_text().strip()]
    assert not holding(seen, secrets), "an S3 key or the engine's token is on a command line"
