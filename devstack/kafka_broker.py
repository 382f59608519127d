"""A single-node Apache Kafka broker (KRaft: broker and controller in one JVM) for one machine:
``make kafka``, ``make dev KAFKA=1`` and the tests' fixture.

Kafka's own jars come from Maven Central once, with the Ivy resolver pyspark ships, into the
per-user cache beside Spark's (``$XDG_CACHE_HOME/lakehouse_assets/kafka-broker/<version>``),
each checked against the SHA-256 pinned in :mod:`devstack.download_checksums`, so
starting a broker needs no network and no Docker. Its logs and data stay under the folder it
is given (``$LAKEHOUSE_ROOT/kafka`` for ``make kafka``).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pyspark

from devstack.download_checksums import KAFKA_BROKER_JARS
from devstack.ports import free_port, serving
from devstack.supervisor import serve_in_foreground, start_process, stop_group, wait_until_serving
from lakehouse_assets.lib.downloads import ChecksumMismatch, check_folder
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current, user_cache

KAFKA_VERSION = "3.9.2"
BROKER_MODULES = [
    ("org.apache.kafka", "kafka_2.13", KAFKA_VERSION),
    # Kafka 3.9 logs through slf4j onto log4j 1.x's API; reload4j is its maintained successor.
    ("ch.qos.reload4j", "reload4j", "1.2.25"),
    ("org.slf4j", "slf4j-reload4j", "1.7.36"),
]
LOG4J = """log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.KafkaServer=INFO
"""


class BrokerError(RuntimeError):
    """The broker could not be set up or started; the message is one sentence with the fix."""


def broker_jar_dir() -> Path:
    return user_cache() / "kafka-broker" / KAFKA_VERSION


def _ivy_module() -> str:
    deps = "\n".join(
        f'    <dependency org="{o}" name="{n}" rev="{v}" conf="default->default"/>' for o, n, v in BROKER_MODULES
    )
    return (
        '<ivy-module version="2.0">\n  <info organisation="lakehouse_assets" module="kafka-broker"/>\n'
        f"  <dependencies>\n{deps}\n  </dependencies>\n</ivy-module>\n"
    )


def broker_jars(resolve: bool = False, log: Path | None = None) -> list[str]:
    """The broker's class path; with ``resolve``, downloads it first when missing.

    :raises BrokerError: the jars are missing (and could not be downloaded).
    """
    target = broker_jar_dir()
    if not (target / "MANIFEST").exists() and resolve:
        _resolve(target, log or target.parent / "resolve.log")
    if not (target / "MANIFEST").exists():
        raise BrokerError(f"Kafka's broker jars are not in {target}: run `make setup` (needs Maven Central once).")
    return sorted(str(p) for p in target.glob("*.jar"))


def _resolve(target: Path, log: Path) -> None:
    ivy_jar = next((Path(pyspark.__file__).parent / "jars").glob("ivy-*.jar"))
    staging = target.parent / f"{target.name}.{os.getpid()}"
    staging.mkdir(parents=True, exist_ok=True)
    (staging / "ivy.xml").write_text(_ivy_module())
    # Ivy's cache of its own per process: two setups resolving into one cache at once clash on
    # its partial downloads (both then fail with files of size 0).
    ivy_cache = target.parent / f"ivy-cache.{os.getpid()}"
    command = [
        "java", "-jar", str(ivy_jar), "-ivy", str(staging / "ivy.xml"), "-confs", "default",
        "-cache", str(ivy_cache), "-retrieve", f"{staging}/[artifact]-[revision](-[classifier]).[ext]",
    ]  # fmt: skip
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
    shutil.rmtree(ivy_cache, ignore_errors=True)
    if done.returncode != 0 or not list(staging.glob("kafka_*.jar")):
        shutil.rmtree(staging, ignore_errors=True)
        raise BrokerError(
            f"could not download Kafka {KAFKA_VERSION}'s jars from Maven Central (resolver output in {log})"
        )
    try:
        check_pinned(staging)
    except ChecksumMismatch:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    (staging / "MANIFEST").write_text("\n".join(":".join(m) for m in BROKER_MODULES) + "\n")
    if target.exists():
        return  # another setup finished first
    staging.rename(target)


def cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding, as Kafka's own
    ``Uuid.randomUuid`` makes them (never starting with ``-``, which the tool would take for an
    option)."""
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not candidate.startswith("-"):
            return candidate


def server_properties(folder: Path, port: int, controller_port: int) -> str:
    return "\n".join([
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"log.dirs={folder / 'data'}",
        "num.partitions=1",
        "auto.create.topics.enable=true",
        "offsets.topic.replication.factor=1",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
    ]) + "\n"  # fmt: skip


class KafkaBroker:
    """A broker on 127.0.0.1 keeping its data in ``folder``; a context manager that stops it.

    :param folder: the broker's folder (data, configuration, ``server.log``); kept across
        restarts: a formatted folder is started again as it is.
    :param port: the client port (``PLAINTEXT``); None picks a free one.
    :param heap: the JVM's heap (``-Xmx``).
    """

    def __init__(self, folder: Path, port: int | None = None, heap: str = "512m") -> None:
        self.folder = folder
        self.port = port or free_port()
        self.heap = heap
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _command(self, main: str, *args: str) -> list[str]:
        class_path = os.pathsep.join(broker_jars())
        log4j = f"-Dlog4j.configuration=file:{self.folder / 'log4j.properties'}"
        return ["java", f"-Xmx{self.heap}", "-XX:+UseSerialGC", log4j, "-cp", class_path, main, *args]

    def start(self, timeout_s: float = 60.0) -> KafkaBroker:
        if serving(self.port):
            raise BrokerError(
                f"port {self.port} on 127.0.0.1 is taken: stop what listens there or set LAKEHOUSE_KAFKA_PORT"
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        config = self.folder / "server.properties"
        config.write_text(server_properties(self.folder, self.port, free_port()))
        (self.folder / "log4j.properties").write_text(LOG4J.format(log=self.folder / "server.log"))
        if not (self.folder / "data" / "meta.properties").exists():
            formatted = subprocess.run(
                self._command("kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", str(config)),
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if formatted.returncode != 0:
                last = (formatted.stderr or formatted.stdout).strip().splitlines()[-1:] or ["no output"]
                raise BrokerError(f"formatting the broker's storage in {self.folder} failed: {last[0]}")
        with open(self.folder / "console.log", "ab") as out:  # the broker keeps its own descriptor
            self.process = start_process(self._command("kafka.Kafka", str(config)), log=out)
        try:
            wait_until_serving(self.port, self.process, timeout=timeout_s, what="the Kafka broker")
        except (RuntimeError, TimeoutError) as error:
            self.stop()
            raise BrokerError(f"{error} (see {self.folder / 'server.log'})") from None
        return self

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        stop_group(self.process, 30)
        self.process = None

    def __enter__(self) -> KafkaBroker:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def check_pinned(folder: Path) -> None:
    """Refuse ``folder`` unless its jars are exactly those pinned in :mod:`devstack.download_checksums`.

    :raises ChecksumMismatch: one sentence naming the jar.
    """
    check_folder(folder, KAFKA_BROKER_JARS, f"the Kafka {KAFKA_VERSION} broker", "devstack/download_checksums.py")


def setup() -> int:
    """``make setup``: the broker's jars into the per-user cache, once per machine; each checked
    against its pinned SHA-256 (a cache filled before the pins, once)."""
    try:
        if (broker_jar_dir() / "MANIFEST").exists():
            check_pinned(broker_jar_dir())
            return 0
        print(f"setup: resolving Apache Kafka {KAFKA_VERSION} (the local broker) from Maven Central", flush=True)
        broker_jars(resolve=True)
    except ChecksumMismatch as error:
        print(error, file=sys.stderr)
        return 1
    except BrokerError as error:
        print(f"Setup failed: {error}; check the network or proxy and run make again.", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    """``make kafka``: a broker in the foreground on ``LAKEHOUSE_KAFKA_PORT`` until Ctrl-C, its
    data under ``$LAKEHOUSE_ROOT/kafka``."""
    paths = LakehousePaths(current().root)
    if not paths.is_local:
        print("make kafka keeps the broker's data under a local LAKEHOUSE_ROOT; this one is a URI.", file=sys.stderr)
        return 1
    broker = KafkaBroker(paths.local_path(paths.root) / "kafka", port=current().kafka_port)

    def start() -> None:
        broker_jars(resolve=True)
        broker.start()

    return serve_in_foreground(
        "kafka", start, broker.stop, lambda: broker.bootstrap + "\n",
        lambda: f"Kafka {KAFKA_VERSION} on {broker.bootstrap} (data and server.log in {broker.folder}); "
                f"runs read it with LAKEHOUSE_KAFKA_BOOTSTRAP={broker.bootstrap}. Ctrl-C stops it.",
        watch=broker.running, exit_code=lambda: broker.process.returncode if broker.process else None, restart=False,
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
