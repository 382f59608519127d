"""S3 settings reach Spark and pyarrow, and the bucket's credentials never reach a command line."""

from __future__ import annotations

import stat
from pathlib import Path

from devstack.environment import environment
from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.conf import spark_conf
from lakehouse_assets.lib.spark.connect_server import connect_server_command
from lakehouse_assets.lib.spark.object_store import pyarrow_s3_options

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
    # A local driver (PySpark puts its settings on the JVM's command line) reads them from its environment.
    assert S3["AWS_SECRET_ACCESS_KEY"] not in str(local) and S3["AWS_ACCESS_KEY_ID"] not in str(local)
    assert local["spark.hadoop.fs.s3a.endpoint"] == S3["LAKEHOUSE_S3_ENDPOINT"]
    assert local["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    # A cluster's executors need them in the settings: the engine passes them in a private file.
    assert cluster["spark.hadoop.fs.s3a.secret.key"] == S3["AWS_SECRET_ACCESS_KEY"]
    assert not any(S3["AWS_SECRET_ACCESS_KEY"] in part or S3["AWS_ACCESS_KEY_ID"] in part for part in command)
    assert command[command.index("--properties-file") + 1] == str(secrets)
    assert S3["AWS_SECRET_ACCESS_KEY"] in secrets.read_text()
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600


def test_the_same_endpoint_and_credentials_reach_pyarrow() -> None:
    with environment({**S3, "AWS_SESSION_TOKEN": "token-for-the-test"}):
        options = pyarrow_s3_options(current())
        conf = spark_conf(master="spark://127.0.0.1:7077")
    assert options["endpoint_override"] == "127.0.0.1:8333" and options["scheme"] == "http"
    assert (options["access_key"], options["secret_key"], options["session_token"]) == (
        S3["AWS_ACCESS_KEY_ID"], S3["AWS_SECRET_ACCESS_KEY"], "token-for-the-test")  # fmt: skip
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    assert conf["spark.hadoop.fs.s3a.session.token"] == "token-for-the-test"
