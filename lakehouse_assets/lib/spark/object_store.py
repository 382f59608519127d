"""Object storage settings for Spark's ``s3a://`` filesystem (hadoop-aws) and the same bucket
seen from Python (``pyarrow.fs``), both from :mod:`lakehouse_assets.lib.settings`.

With ``LAKEHOUSE_S3_ENDPOINT`` unset, both use AWS's endpoints and, without
``AWS_ACCESS_KEY_ID``, the AWS SDK's default credential chain. With an endpoint (an
S3-compatible server such as ``make s3``), requests use path-style URLs, plain HTTP when the
endpoint says so, and no SDK-v2 integrity checksums, which many such servers refuse.
"""

from __future__ import annotations

from typing import Any

from lakehouse_assets.lib.settings import Settings

CREDENTIAL_PROVIDER = "spark.hadoop.fs.s3a.aws.credentials.provider"
# Settings holding credentials: never on a command line (see :mod:`.launch_secrets`).
SECRET_KEYS = ("spark.hadoop.fs.s3a.access.key", "spark.hadoop.fs.s3a.secret.key", "spark.hadoop.fs.s3a.session.token")


def s3a_secrets(settings: Settings) -> dict[str, str]:
    """The ``spark.hadoop.fs.s3a.*`` settings holding the configured credentials (empty without
    ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY``).

    :param settings: the settings in effect.
    """
    if not (settings.s3_access_key and settings.s3_secret_key):
        return {}
    return {
        SECRET_KEYS[0]: settings.s3_access_key,
        SECRET_KEYS[1]: settings.s3_secret_key,
        **({SECRET_KEYS[2]: settings.s3_session_token} if settings.s3_session_token else {}),
    }


def s3a_conf(settings: Settings) -> dict[str, Any]:
    """``spark.hadoop.fs.s3a.*`` settings for the configured endpoint and the provider of the
    configured credentials, none of them secret (empty when neither is configured: hadoop-aws's
    defaults then reach AWS). The credentials themselves are :func:`s3a_secrets`."""
    conf: dict[str, Any] = {}
    if settings.s3_access_key and settings.s3_secret_key:
        provider = "TemporaryAWSCredentialsProvider" if settings.s3_session_token else "SimpleAWSCredentialsProvider"
        conf[CREDENTIAL_PROVIDER] = f"org.apache.hadoop.fs.s3a.{provider}"
    if settings.s3_endpoint:
        conf |= {
            "spark.hadoop.fs.s3a.endpoint": settings.s3_endpoint,
            "spark.hadoop.fs.s3a.endpoint.region": settings.s3_region,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": str(not settings.s3_endpoint.startswith("http:")).lower(),
            "spark.hadoop.fs.s3a.checksum.generation": "false",
            "spark.hadoop.fs.s3a.checksum.validation": "false",
            "spark.hadoop.fs.s3a.create.checksum.algorithm": "NONE",
            "spark.hadoop.fs.s3a.input.stream.type": "classic",
            # A restarted server answers within seconds; fail a task in ~1 min, not 20.
            "spark.hadoop.fs.s3a.connection.establish.timeout": "5s",
            "spark.hadoop.fs.s3a.retry.limit": "10",
        }
    return conf


def pyarrow_s3_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments of ``pyarrow.fs.S3FileSystem`` for the same bucket and credentials."""
    # A sensor tick must not hang on an unreachable server: it fails and the next tick retries.
    options: dict[str, Any] = {"region": settings.s3_region, "connect_timeout": 5, "request_timeout": 30}
    if settings.s3_access_key and settings.s3_secret_key:
        options |= {"access_key": settings.s3_access_key, "secret_key": settings.s3_secret_key}
        if settings.s3_session_token:
            options["session_token"] = settings.s3_session_token
    if settings.s3_endpoint:
        scheme, _, address = settings.s3_endpoint.rpartition("://")
        options |= {"endpoint_override": address, "scheme": scheme or "https", "force_virtual_addressing": False}
    return options
