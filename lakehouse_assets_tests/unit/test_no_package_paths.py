"""Nothing is placed by where the package is installed: the data root defaults to ``data/`` in the
working directory, Spark's metastore and warehouse are the data root's (or the user cache's for
object storage), the class archive is in the user cache, and a child Python imports from where
its parent did."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pyspark
import pytest

from lakehouse_assets.lib.accel import class_archive
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.settings import current
from lakehouse_assets.lib.spark.child_python import child_python_path
from lakehouse_assets.lib.spark.conf import spark_conf

pytestmark = pytest.mark.unit


def test_the_data_root_is_data_in_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert current({}).root == str(tmp_path / "data")
    assert current({"LAKEHOUSE_ROOT": "lake/one"}).root == str(tmp_path / "lake" / "one")
    assert current({"LAKEHOUSE_ROOT": "s3a://bucket/lake/"}).root == "s3a://bucket/lake"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert current({}).root == str(tmp_path / "elsewhere" / "data"), "read when asked, not at import"


def test_spark_keeps_its_state_under_the_data_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(tmp_path / "root"))
    conf = spark_conf(master="local[1]", require_jars=False)
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path / "root" / "_spark" / "warehouse")
    options = conf["spark.driver.extraJavaOptions"].split()
    assert f"-Dderby.system.home={tmp_path / 'root' / '_spark' / 'derby'}" in options


def test_a_root_on_object_storage_keeps_spark_state_in_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("LAKEHOUSE_ROOT", "s3a://bucket/lake")
    state = (
        tmp_path / "cache" / "lakehouse_assets" / "spark-state" / hashlib.sha256(b"s3a://bucket/lake").hexdigest()[:16]
    )
    assert spark_conf(master="local[1]", require_jars=False)["spark.sql.warehouse.dir"] == str(state / "warehouse")
    assert LakehousePaths("s3a://other/lake").spark_state() != state


def test_the_class_archive_is_in_the_user_cache_and_orphans_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = class_archive.archive_dir()
    assert folder.parent == tmp_path / "cache" / "lakehouse_assets" / "spark-cds"
    folder.mkdir(parents=True)
    gone, kept = folder.parent / "gone", folder.parent / "kept"
    for other, owner in ((gone, tmp_path / "deleted-venv"), (kept, tmp_path)):
        other.mkdir()
        (other / "driver-0.jsa").write_bytes(b"archive")
        (other / class_archive.OWNER).write_text(str(owner))
    partial = folder / "driver-1.partial"
    partial.write_bytes(b"archive")
    assert class_archive.install(partial, folder / "driver-1.jsa")
    assert sorted(p.name for p in folder.parent.iterdir()) == sorted([folder.name, "kept"])
    assert (folder / class_archive.OWNER).read_text() == str(Path(pyspark.__file__).parent)


def test_a_child_imports_from_where_its_parent_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = Path(os.path.realpath(tmp_path))
    project, here = real / "project", real / "here"
    project.mkdir()
    here.mkdir()
    monkeypatch.chdir(here)
    installed = os.path.join(sys.prefix, "lib", "site-packages-of-this-interpreter")
    monkeypatch.setattr(sys, "path", [str(project), "", installed, str(tmp_path / "missing"), str(project)])
    assert child_python_path({"PYTHONPATH": f"/from/the/environment{os.pathsep}"}) == os.pathsep.join(
        [str(project), str(here), "/from/the/environment"]
    )
    assert child_python_path({}) == os.pathsep.join([str(project), str(here)])
