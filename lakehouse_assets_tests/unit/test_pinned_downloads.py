"""Every downloaded artifact must have the SHA-256 committed in the repository: one that differs,
that nothing pins, or a pinned one that is missing stops setup with one sentence naming it.
Spark-free and offline: downloads come from ``file://`` URLs, caches are temporary folders."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from devstack import kafka_broker, s3server
from devstack.download_checksums import KAFKA_BROKER_JARS
from lakehouse_assets.lib.downloads import STAMP, ChecksumMismatch, check_folder, download, sha256_of
from lakehouse_assets.lib.spark import jars

pytestmark = pytest.mark.unit


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_download_that_differs_from_its_pin_is_refused_and_not_kept(tmp_path: Path) -> None:
    served = tmp_path / "served.jar"
    served.write_bytes(b"the artifact")
    target = tmp_path / "cache" / "artifact-1.0.jar"
    with pytest.raises(
        ChecksumMismatch, match=r"^Setup stopped: artifact-1\.0\.jar \(the thing\) has SHA-256 [0-9a-f]{64}, not"
    ):
        download(served.as_uri(), target, "0" * 64, "the thing", "pins.py")
    assert list(target.parent.iterdir()) == [], "a refused download was left in the cache"
    download(served.as_uri(), target, sha256_of(served), "the thing", "pins.py")
    assert target.read_bytes() == b"the artifact"


def test_a_folder_must_hold_exactly_the_pinned_files(tmp_path: Path) -> None:
    (tmp_path / "a-1.jar").write_bytes(b"a")
    (tmp_path / "b-1.jar").write_bytes(b"b")
    pins = {"a-1.jar": sha256_of(tmp_path / "a-1.jar"), "b-1.jar": sha256_of(tmp_path / "b-1.jar")}
    with pytest.raises(ChecksumMismatch, match=r"b-1\.jar \(x\) has SHA-256"):
        check_folder(tmp_path, {**pins, "b-1.jar": "f" * 64}, "x", "pins.py")
    with pytest.raises(ChecksumMismatch, match=r"b-1\.jar \(x\) was downloaded but no SHA-256 for it is committed"):
        check_folder(tmp_path, {"a-1.jar": pins["a-1.jar"]}, "x", "pins.py")
    with pytest.raises(ChecksumMismatch, match=r"c-1\.jar \(x\) is pinned in pins\.py but was not downloaded"):
        check_folder(tmp_path, {**pins, "c-1.jar": "e" * 64}, "x", "pins.py")
    assert not (tmp_path / STAMP).exists(), "a refused folder was stamped"
    check_folder(tmp_path, pins, "x", "pins.py")
    assert (tmp_path / STAMP).read_text() == f"{pins['a-1.jar']}  a-1.jar\n{pins['b-1.jar']}  b-1.jar\n"


def test_sparks_jars_are_refused_when_one_was_altered(tmp_path: Path) -> None:
    cache = tmp_path / "spark-jars"
    shutil.copytree(jars.jar_cache_dir(), cache, ignore=shutil.ignore_patterns(STAMP))
    jars.check_pinned(cache)  # the committed pins are those of the jars setup downloaded
    (cache / STAMP).unlink()
    _flip_a_byte(cache / "io.delta_delta-spark_4.2_2.13-4.4.0.jar")
    with pytest.raises(ChecksumMismatch, match=r"io\.delta_delta-spark_4\.2_2\.13-4\.4\.0\.jar \(a jar of Delta Lake"):
        jars.check_pinned(cache)


def test_setup_stops_in_one_sentence_on_an_altered_s3proxy_or_kafka_jar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    jar = tmp_path / "lakehouse_assets" / "s3proxy" / s3server.JAR
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"not S3Proxy")
    broker = kafka_broker.broker_jar_dir()
    broker.mkdir(parents=True)
    (broker / "MANIFEST").write_text("org.apache.kafka:kafka_2.13:3.9.2\n")
    for name in KAFKA_BROKER_JARS:
        (broker / name).write_bytes(b"not Kafka")

    assert s3server.setup() == 1
    assert kafka_broker.setup() == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"Setup stopped: {s3server.JAR} (S3Proxy {s3server.VERSION}) has SHA-256")
    assert lines[1].startswith("Setup stopped: ") and "(the Kafka 3.9.2 broker) has SHA-256" in lines[1]
    assert not (jar.parent / STAMP).exists() and not (broker / STAMP).exists()
