"""S3 settings reach Spark and pyarrow, and the bucket's credentials never reach a command line."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

import pytest

from devstack.environment import environment
from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.conf import spark_conf
from lakehouse_assets.lib.spark.connect_server import connect_server_command
from lakehouse_assets.lib.spark.launch_secrets import SUBMIT_ARGS, embedded_driver_secrets
from lakehouse_assets.lib.spark.object_store import pyarrow_s3_options, s3a_secrets

pytestmark = pytest.mark.unit  # Spark-free: settings, files and the environment only

S3 = {
    "LAKEHOUSE_S3_ENDPOINT": "http://127.0.0.1:8333",
    "AWS_ACCESS_KEY_ID": "key-id-for-the-test",
    "AWS_SECRET_ACCESS_KEY": "secret-for-the-test",
}


def test_credentials_stay_off_command_lines(tmp_path: Path) -> None:
    with environment(S3):
        local = spark_conf(master="local[*]")
        cluster = spark_conf(master="spark://127.0.0.1:7077")
        secrets = tmp_path / "secrets.properties"
        command = connect_server_command(15099, master="spark://127.0.0.1:7077", secrets_file=secrets)
        local_engine = connect_server_command(15099, master="local[2]", secrets_file=tmp_path / "unused.properties")
    # What PySpark puts on spark-submit's command line holds no credential, whatever the master.
    for conf in (local, cluster):
        assert S3["AWS_SECRET_ACCESS_KEY"] not in str(conf) and S3["AWS_ACCESS_KEY_ID"] not in str(conf)
        assert conf["spark.hadoop.fs.s3a.endpoint"] == S3["LAKEHOUSE_S3_ENDPOINT"]
        assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    # A local driver reads them from its environment (S3A's default chain); a cluster's driver
    # from a private file, with the provider that reads them from its settings.
    assert "spark.hadoop.fs.s3a.aws.credentials.provider" not in local
    assert cluster["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith(".SimpleAWSCredentialsProvider")
    assert not any(S3["AWS_SECRET_ACCESS_KEY"] in part or S3["AWS_ACCESS_KEY_ID"] in part for part in command)
    assert command[command.index("--properties-file") + 1] == str(secrets) and "--load-spark-defaults" in command
    assert "spark.hadoop.fs.s3a.secret.key=secret-for-the-test" in secrets.read_text().splitlines()
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert "--properties-file" not in local_engine and not (tmp_path / "unused.properties").exists()


def test_an_embedded_cluster_driver_reads_credentials_from_a_private_file_named_for_its_launch() -> None:
    before = os.environ.get(SUBMIT_ARGS)
    with environment(S3):
        with embedded_driver_secrets("local[2]"):
            assert os.environ.get(SUBMIT_ARGS) == before, "a local driver needs no file"
        with embedded_driver_secrets("local-cluster[1,1,1024]"):
            words = shlex.split(os.environ[SUBMIT_ARGS])
            properties = Path(words[words.index("--properties-file") + 1])
            assert words[-1] == "pyspark-shell" and "--load-spark-defaults" in words
            assert stat.S_IMODE(properties.stat().st_mode) == 0o600
            assert stat.S_IMODE(properties.parent.stat().st_mode) == 0o700
            assert "spark.hadoop.fs.s3a.access.key=key-id-for-the-test" in properties.read_text().splitlines()
    assert os.environ.get(SUBMIT_ARGS) == before and not properties.exists()


def test_the_same_endpoint_and_credentials_reach_pyarrow() -> None:
    with environment({**S3, "AWS_SESSION_TOKEN": "token-for-the-test"}):
        options = pyarrow_s3_options(current())
        conf = spark_conf(master="spark://127.0.0.1:7077")
        secrets = s3a_secrets(current())
    assert options["endpoint_override"] == "127.0.0.1:8333" and options["scheme"] == "http"
    assert (options["access_key"], options["secret_key"], options["session_token"]) == (
        S3["AWS_ACCESS_KEY_ID"], S3["AWS_SECRET_ACCESS_KEY"], "token-for-the-test")  # fmt: skip
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    assert secrets["spark.hadoop.fs.s3a.session.token"] == "token-for-the-test"
    assert "token-for-the-test" not in str(conf)
