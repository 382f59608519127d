"""Every setting of the framework, read from the environment in this one module, at run time.

Nothing reads ``os.environ`` at import: callers ask :func:`current` when they need a value, so a
changed environment (a test, a code-location reload) is seen by the next run. Each field names
its variable; every one has an embedded default for one machine.

``LAKEHOUSE_ROOT`` may be a local path or a URI (``s3a://bucket/lakehouse``); a relative path,
and the default ``data``, are taken from the working directory when :func:`current` is asked (a
Dagster project's commands run from its root). No default is derived from where the package is
installed: an installed wheel lives in site-packages, which holds no data and no cache.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from lakehouse_assets.lib.errors import ConfigurationError


def _normalize_root(root: str) -> str:
    if "://" in root or root.startswith("file:"):
        return root.rstrip("/")
    return str(Path(root).expanduser().resolve())


@dataclass(frozen=True)
class Settings:
    """The framework's settings; the metadata of each field names its environment variable."""

    root: str = "data"
    """``LAKEHOUSE_ROOT``: the data root (landing files, tables, checkpoints); a relative path is
    under the working directory (default: ``data`` there, a Dagster project's root)."""
    allowed_lateness: str = "1 hour"
    """``LAKEHOUSE_ALLOWED_LATENESS``: how late event-time data may arrive before watermarked
    queries drop it (a Spark interval such as ``2 hours``)."""
    skip_idle_queries: bool = True
    """``LAKEHOUSE_SKIP_IDLE_QUERIES``: ``0`` starts every query even when its input has no new
    Delta version."""
    jar_cache: str = ""
    """``LAKEHOUSE_JAR_CACHE``: folder of Delta's jars (default: the per-user cache)."""
    class_archive: bool = True
    """``LAKEHOUSE_CLASS_ARCHIVE``: ``0`` starts local drivers without the class archive."""
    warm_workers: bool = True
    """``LAKEHOUSE_WARM_WORKERS``: ``0`` starts an engine's streaming Python workers cold
    (see :mod:`lakehouse_assets.lib.accel.warm_workers`)."""
    warm_runs: bool = True
    """``LAKEHOUSE_WARM_RUNS``: ``0`` starts every run that :class:`WarmRunLauncher` launches as a
    new process (see :mod:`lakehouse_assets.lib.accel.warm_runs`)."""
    class_archive_dump: str = ""
    """``LAKEHOUSE_CLASS_ARCHIVE_DUMP``: write a class archive to this path when the driver exits."""
    pin_refresh: bool = False
    """``LAKEHOUSE_PIN_REFRESH``: ``1`` keeps downloads whatever their SHA-256, only to compute new
    pins after a version change (see :mod:`lakehouse_assets.lib.downloads`)."""
    spark_remote: str = ""
    """``SPARK_REMOTE`` (PySpark's own variable): the Spark Connect engine every run is a client
    of (``sc://127.0.0.1:15002``); empty runs an embedded session in the run's process."""
    engine_port: int = 15002
    """``LAKEHOUSE_ENGINE_PORT``: the port ``make engine`` serves Spark Connect on."""
    engine_token_file: str = ""
    """``LAKEHOUSE_ENGINE_TOKEN_FILE``: the file holding the engine's token, readable by this user
    only; the engine is started with it and every client sends it (default:
    ``$XDG_CONFIG_HOME/lakehouse_assets/engine-token``, ``~/.config`` without it)."""
    engine_auth: bool = True
    """``LAKEHOUSE_ENGINE_AUTH``: ``0`` starts the engine without a token, which only a loopback
    address may then serve (any local process can use it)."""
    engine_cores: int = 0
    """``LAKEHOUSE_ENGINE_CORES``: the cores of the engine runs use, from which the run queue's
    limit is derived (:mod:`lakehouse_assets.lib.accel.admission`); ``0``: this machine's."""
    sensor_interval_s: int = 1
    """``LAKEHOUSE_SENSOR_INTERVAL_SECONDS``: minimum seconds between two ticks of a sensor."""
    sensor_settle_s: float = 0.5
    """``LAKEHOUSE_SENSOR_SETTLE_SECONDS``: a folder whose newest file is younger is settling."""
    sensor_max_settle_s: float = 60.0
    """``LAKEHOUSE_SENSOR_MAX_SETTLE_SECONDS``: a burst never delays its first file longer."""
    sensor_grace_s: float = 600.0
    """``LAKEHOUSE_SENSOR_GRACE_SECONDS``: how far back the cursor remembers file names."""
    sensor_settle_wait_s: float = 1.0
    """``LAKEHOUSE_SENSOR_SETTLE_WAIT_SECONDS``: a tick waits this long for a settling folder."""
    sensor_watch_s: float = 3.5
    """``LAKEHOUSE_SENSOR_WATCH_SECONDS``: a tick that finds nothing new, or new files behind a
    going run, watches the folder and the run until this long after it started (with the settle
    wait, at most 4 s; ``0``: it returns at once and the daemon's next pass looks again)."""
    sensor_retry_backoff_s: float = 10.0
    """``LAKEHOUSE_SENSOR_RETRY_BACKOFF_SECONDS``: after a source's run failed, the sensor asks
    for another run this long after it ended, doubling the wait for each failure in a row."""
    maintenance_cron: str = "0 3 * * *"
    """``LAKEHOUSE_MAINTENANCE_CRON``: when every table's OPTIMIZE + VACUUM runs (UTC)."""
    vacuum_retention_hours: int = 168
    """``LAKEHOUSE_VACUUM_RETENTION_HOURS``: VACUUM retention of the nightly schedule."""
    refresh_cron: str = "0 * * * *"
    """``LAKEHOUSE_REFRESH_CRON``: the refresh_all safety net's schedule (off by default)."""
    spark_master: str = "local[*]"
    """``SPARK_MASTER``: the Spark master."""
    spark_shuffle_partitions: str = "2"
    """``SPARK_SHUFFLE_PARTITIONS``: shuffle width (and Delta's snapshot partitions)."""
    spark_listing_parallelism: str = str(os.cpu_count() or 2)
    """``SPARK_LISTING_PARALLELISM``: tasks that list files read by path (local masters)."""
    spark_driver_java_options: str = ""
    """``SPARK_DRIVER_JAVA_OPTIONS``: extra JVM flags of the driver."""
    spark_driver_memory: str = "2g"
    """``SPARK_DRIVER_MEMORY``: the driver's heap."""
    spark_local_ip: str = "127.0.0.1"
    """``SPARK_LOCAL_IP``: the address a local driver binds to."""
    spark_log_level: str = "ERROR"
    """``SPARK_LOG_LEVEL``: Spark's log level."""
    kafka_bootstrap: str = ""
    """``LAKEHOUSE_KAFKA_BOOTSTRAP``: the Kafka brokers (``127.0.0.1:9092``); empty: no broker,
    flows and sensors that read Kafka are skipped."""
    kafka_port: int = 9092
    """``LAKEHOUSE_KAFKA_PORT``: the port ``make kafka`` serves its broker on."""
    s3_endpoint: str = ""
    """``LAKEHOUSE_S3_ENDPOINT``: an S3-compatible server (``http://127.0.0.1:8333``); empty:
    AWS's own endpoints."""
    s3_region: str = "us-east-1"
    """``AWS_REGION``: the bucket's region."""
    s3_access_key: str = field(default="", repr=False)
    """``AWS_ACCESS_KEY_ID``: with the secret key, the credentials of ``s3a://`` roots; empty:
    the AWS SDK's default chain (instance profile, ``~/.aws``)."""
    s3_secret_key: str = field(default="", repr=False)
    """``AWS_SECRET_ACCESS_KEY``: see ``AWS_ACCESS_KEY_ID``."""
    s3_session_token: str = field(default="", repr=False)
    """``AWS_SESSION_TOKEN``: with the key pair, temporary credentials (an assumed role, SSO)."""
    s3_port: int = 8333
    """``LAKEHOUSE_S3_PORT``: the port ``make s3`` serves its S3-compatible server on."""
    landing_max_file_bytes: int = 1 << 30
    """``LAKEHOUSE_LANDING_MAX_FILE_BYTES``: the most a landed file may hold, decompressed; a larger
    one is set aside whole (``landing(..., max_file_bytes=)`` per input)."""
    landing_max_line_bytes: int = 16 << 20
    """``LAKEHOUSE_LANDING_MAX_LINE_BYTES``: the longest line a landed text, JSON or CSV file may
    hold; a file with a longer one is set aside whole (``landing(..., max_line_bytes=)``)."""
    landing_max_columns: int = 1000
    """``LAKEHOUSE_LANDING_MAX_COLUMNS``: the most columns a landed file's header or fields may
    bring an inferred schema to; a file that would take it further is set aside."""
    landing_links: str = "refuse"
    """``LAKEHOUSE_LANDING_LINKS``: ``refuse`` sets every symbolic link in a landing folder aside;
    ``inside`` reads links to regular files inside the same landing folder."""
    poison_attempts: int = 2
    """``LAKEHOUSE_POISON_ATTEMPTS``: a landed file whose reading fails this many times in a row
    (within a run and across runs) is set aside, and the query runs again without it."""
    transient_tries: int = 4
    """``LAKEHOUSE_TRANSIENT_TRIES``: how many times a step runs a table whose engine went away
    or whose Python worker did not connect back (``1``: no retry)."""
    transient_backoff_s: float = 5.0
    """``LAKEHOUSE_TRANSIENT_BACKOFF_SECONDS``: the wait before the first retry, doubled for each next."""
    table_lease: bool = True
    """``LAKEHOUSE_TABLE_LEASE``: on object storage, every writer of a table holds its lease, an
    object created with a conditional write (:mod:`lakehouse_assets.lib.engine.locking.table_lease`);
    ``0``: Dagster's pools alone keep writers apart there."""
    table_lease_s: float = 60.0
    """``LAKEHOUSE_TABLE_LEASE_SECONDS``: a lease not renewed for this long has expired (its holder
    renews it every third of it), so a killed writer holds up the next one at most this long."""
    table_lease_wait_s: float = 900.0
    """``LAKEHOUSE_TABLE_LEASE_WAIT_SECONDS``: how long a writer waits for another one's lease
    before it fails, naming the holder."""


ENV_NAMES: dict[str, str] = {
    "root": "LAKEHOUSE_ROOT",
    "allowed_lateness": "LAKEHOUSE_ALLOWED_LATENESS",
    "skip_idle_queries": "LAKEHOUSE_SKIP_IDLE_QUERIES",
    "jar_cache": "LAKEHOUSE_JAR_CACHE",
    "class_archive": "LAKEHOUSE_CLASS_ARCHIVE",
    "class_archive_dump": "LAKEHOUSE_CLASS_ARCHIVE_DUMP",
    "pin_refresh": "LAKEHOUSE_PIN_REFRESH",
    "warm_workers": "LAKEHOUSE_WARM_WORKERS",
    "warm_runs": "LAKEHOUSE_WARM_RUNS",
    "spark_remote": "SPARK_REMOTE",
    "engine_port": "LAKEHOUSE_ENGINE_PORT",
    "engine_token_file": "LAKEHOUSE_ENGINE_TOKEN_FILE",
    "engine_auth": "LAKEHOUSE_ENGINE_AUTH",
    "engine_cores": "LAKEHOUSE_ENGINE_CORES",
    "sensor_interval_s": "LAKEHOUSE_SENSOR_INTERVAL_SECONDS",
    "sensor_settle_s": "LAKEHOUSE_SENSOR_SETTLE_SECONDS",
    "sensor_max_settle_s": "LAKEHOUSE_SENSOR_MAX_SETTLE_SECONDS",
    "sensor_grace_s": "LAKEHOUSE_SENSOR_GRACE_SECONDS",
    "sensor_settle_wait_s": "LAKEHOUSE_SENSOR_SETTLE_WAIT_SECONDS",
    "sensor_watch_s": "LAKEHOUSE_SENSOR_WATCH_SECONDS",
    "sensor_retry_backoff_s": "LAKEHOUSE_SENSOR_RETRY_BACKOFF_SECONDS",
    "maintenance_cron": "LAKEHOUSE_MAINTENANCE_CRON",
    "vacuum_retention_hours": "LAKEHOUSE_VACUUM_RETENTION_HOURS",
    "refresh_cron": "LAKEHOUSE_REFRESH_CRON",
    "spark_master": "SPARK_MASTER",
    "spark_shuffle_partitions": "SPARK_SHUFFLE_PARTITIONS",
    "spark_listing_parallelism": "SPARK_LISTING_PARALLELISM",
    "spark_driver_java_options": "SPARK_DRIVER_JAVA_OPTIONS",
    "spark_driver_memory": "SPARK_DRIVER_MEMORY",
    "spark_local_ip": "SPARK_LOCAL_IP",
    "spark_log_level": "SPARK_LOG_LEVEL",
    "kafka_bootstrap": "LAKEHOUSE_KAFKA_BOOTSTRAP",
    "kafka_port": "LAKEHOUSE_KAFKA_PORT",
    "s3_endpoint": "LAKEHOUSE_S3_ENDPOINT",
    "s3_region": "AWS_REGION",
    "s3_access_key": "AWS_ACCESS_KEY_ID",
    "s3_secret_key": "AWS_SECRET_ACCESS_KEY",
    "s3_session_token": "AWS_SESSION_TOKEN",
    "s3_port": "LAKEHOUSE_S3_PORT",
    "landing_max_file_bytes": "LAKEHOUSE_LANDING_MAX_FILE_BYTES",
    "landing_max_line_bytes": "LAKEHOUSE_LANDING_MAX_LINE_BYTES",
    "landing_max_columns": "LAKEHOUSE_LANDING_MAX_COLUMNS",
    "landing_links": "LAKEHOUSE_LANDING_LINKS",
    "poison_attempts": "LAKEHOUSE_POISON_ATTEMPTS",
    "transient_tries": "LAKEHOUSE_TRANSIENT_TRIES",
    "transient_backoff_s": "LAKEHOUSE_TRANSIENT_BACKOFF_SECONDS",
    "table_lease": "LAKEHOUSE_TABLE_LEASE",
    "table_lease_s": "LAKEHOUSE_TABLE_LEASE_SECONDS",
    "table_lease_wait_s": "LAKEHOUSE_TABLE_LEASE_WAIT_SECONDS",
}


def _parse(value: str, default: object) -> object:
    if isinstance(default, bool):
        return value.strip().lower() not in ("0", "false", "no", "off")
    if isinstance(default, int):
        return int(float(value))
    if isinstance(default, float):
        return float(value)
    return value


def current(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings now: each variable that is set and not empty overrides its default.
    A value that does not parse raises one sentence naming the variable."""
    environ = os.environ if environ is None else environ
    defaults = Settings()
    values: dict[str, object] = {}
    for f in fields(Settings):
        raw = environ.get(ENV_NAMES[f.name])
        if not raw:
            continue
        try:
            values[f.name] = _parse(raw, getattr(defaults, f.name))
        except ValueError:
            raise ConfigurationError(
                f"{ENV_NAMES[f.name]}={raw!r} is not a valid {type(getattr(defaults, f.name)).__name__}"
            ) from None
    values["root"] = _normalize_root(str(values.get("root", defaults.root)))
    if values.get("landing_links", "refuse") not in ("refuse", "inside"):
        raise ConfigurationError(f"LAKEHOUSE_LANDING_LINKS={values['landing_links']!r} is not 'refuse' or 'inside'")
    return Settings(**values)  # type: ignore[arg-type]


def user_cache(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user cache folder of this project's downloads (``$XDG_CACHE_HOME`` or
    ``~/.cache``, then ``lakehouse_assets``), shared by every clone on the machine."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lakehouse_assets"


def user_config(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user folder of this project's settings and secrets (``$XDG_CONFIG_HOME`` or
    ``~/.config``, then ``lakehouse_assets``)."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "lakehouse_assets"
