"""Installable anywhere: the wheel, installed into a new virtualenv outside the checkout, runs a
Dagster project made the way Dagster documents it (``create-dagster project``), as
docs/getting-started.md shows: two tables and an asset check declared with the public API,
materialized with ``dg launch --assets '*'`` from the project's root with no ``LAKEHOUSE_ROOT``.
The tables equal answers computed here from the landed lines, the check passed, the data root is
the project's ``data/``, and nothing was written into site-packages.

The new virtualenv gets the checkout's dependencies, already installed, through a ``.pth`` file
naming the checkout virtualenv's site-packages: no network, about a second. (Installing them
from requirements.lock with pip's cache warm took 94 s on 2 cores, most of this test's budget.)
A ``.pth`` path line does not run the ``.pth`` files in that folder, so the checkout's editable
install of ``lakehouse_assets`` (a finder a ``.pth`` file installs) does not come along: the
package is imported from the wheel, as asserted.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from collections import Counter
from pathlib import Path

import pytest

from lakehouse_assets_tests.framework.test_architecture import REPO

pytestmark = [pytest.mark.slow, pytest.mark.gate]

GUIDE = REPO / "docs" / "getting-started.md"
PROJECT = "my-lakehouse"
COMMANDS = ("create-dagster", "dg", "dagster")
# The tables and the check, read back in the new virtualenv: what a user would look at.
READ_BACK = """
import json, sys
import dagster as dg
import lakehouse_assets
from lakehouse_assets.lib.paths import LakehousePaths
from lakehouse_assets.lib.spark.session import get_spark

paths = LakehousePaths.from_env()
spark = get_spark()
tables = {
    name: [row.asDict() for row in spark.read.format("delta").load(paths.table(name)).collect()]
    for name in ("bronze_orders", "silver_orders")
}
with dg.DagsterInstance.get() as instance:
    runs = [run.status.value for run in instance.get_runs()]
    key = dg.AssetCheckKey(dg.AssetKey("silver_orders"), "amount_positive")
    history = instance.event_log_storage.get_asset_check_execution_history(key, limit=5)
    checks = [
        [record.status.value, record.event.asset_check_evaluation.passed]
        for record in history
        if record.event and record.event.asset_check_evaluation
    ]
print(json.dumps({"package": lakehouse_assets.__file__, "root": paths.root, "tables": tables, "runs": runs, "checks": checks}))
"""


def guide_files() -> dict[str, str]:
    """The project's Python files as the guide shows them: each block opens with ``# <path>``."""
    blocks = re.findall(r"```python\n# (src/\S+\.py)\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    return dict(blocks)


def orders(seed: int) -> dict[str, list[str]]:
    """Three files of JSON lines: most orders with a positive amount, some with none, zero or less."""
    rng = random.Random(seed)
    files: dict[str, list[str]] = {}
    for f in range(3):
        lines = []
        for i in range(rng.randint(4, 8)):
            amount = rng.choice([None, 0.0, -3.5, *[round(rng.uniform(0.5, 90), 2)] * 4])
            record = {"order_id": f"o{f}-{i}", "customer": rng.choice(["ada", "bob", "Cy"])}
            if amount is not None or rng.random() < 0.5:
                record["amount"] = amount
            lines.append(json.dumps(record))
        files[f"orders-{f}.jsonl"] = lines
    return files


def expected(files: dict[str, list[str]]) -> tuple[Counter, Counter]:
    """(bronze rows, silver rows) from the lines, by hand: bronze keeps every order as written
    with its file's name; silver those with an amount above 0, the customer upper-cased."""
    bronze, silver = Counter(), Counter()
    for name, lines in files.items():
        for line in lines:
            record = json.loads(line)
            amount = record.get("amount")
            bronze[(record["order_id"], record["customer"], amount, name)] += 1
            if amount is not None and amount > 0:
                silver[(record["order_id"], record["customer"].upper(), amount)] += 1
    return bronze, silver


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 240) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def build_wheel(work: Path) -> Path:
    """The wheel, built from a copy of the sources (setuptools writes build/ beside them)."""
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(
        REPO / "lakehouse_assets", source / "lakehouse_assets", ignore=shutil.ignore_patterns("__pycache__")
    )
    pip_wheel = ["pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(work / "dist"), str(source)]
    run([sys.executable, "-m", *pip_wheel], work, dict(os.environ))
    (wheel,) = (work / "dist").glob("lakehouse_assets-*.whl")
    return wheel


def new_virtualenv(venv: Path, env: dict[str, str]) -> Path:
    """A virtualenv whose own site-packages is empty but for a path to the checkout's
    dependencies; the console scripts of the commands used here, as pip writes them."""
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], venv.parent, env)
    python = venv / "bin" / "python"
    site = Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], venv, env).strip()
    )
    (site / "checkout_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    scripts = {e.name: e for e in importlib.metadata.entry_points(group="console_scripts") if e.name in COMMANDS}
    for name, entry in scripts.items():
        script = venv / "bin" / name
        script.write_text(
            f"#!{python}\nimport sys\nfrom {entry.module} import {entry.attr}\nsys.exit({entry.attr}())\n"
        )
        script.chmod(0o755)
    assert sorted(scripts) == sorted(COMMANDS), "make setup installs create-dagster (the test extra)"
    return site


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if "__pycache__" not in p.parts}


def test_the_wheel_runs_a_dagster_project_of_its_own(tmp_path: Path) -> None:
    started, timings = time.monotonic(), {}

    def lap(step: str) -> None:
        timings[step] = round(time.monotonic() - started - sum(timings.values()), 1)

    wheel = build_wheel(tmp_path)
    lap("wheel")
    venv, home, work = tmp_path / "venv", tmp_path / "dagster_home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    # The user's shell: no LAKEHOUSE_ROOT, nothing of the checkout on the path, no engine.
    gone = ("LAKEHOUSE_ROOT", "PYTHONPATH", "VIRTUAL_ENV", "SPARK_REMOTE", "SPARK_HOME", "PYSPARK_PYTHON")
    env = {k: v for k, v in os.environ.items() if k not in gone}
    path = [
        p
        for p in env.get("PATH", "").split(os.pathsep)
        if p and Path(p).resolve() != Path(sys.executable).parent.resolve()
    ]
    env |= {
        "PATH": os.pathsep.join([str(venv / "bin"), *path]),
        "DAGSTER_HOME": str(home),
        "DAGSTER_DG_UPDATE_CHECK_ENABLED": "0",  # create-dagster asks PyPI for a newer version
        "SPARK_LOCAL_IP": env.get("SPARK_LOCAL_IP", "127.0.0.1"),
    }
    site = new_virtualenv(venv, env)
    python = str(venv / "bin" / "python")
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], work, env)
    run([python, "-m", "lakehouse_assets.lib.spark.jars"], work, env)  # cached: checked, not fetched
    run(["create-dagster", "project", "--no-uv-sync", PROJECT], work, env, timeout=60)
    project = work / PROJECT
    run([python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q", "-e", "."], project, env)
    lap("install")
    written = guide_files()
    assert sorted(written) == ["src/my_lakehouse/definitions.py", "src/my_lakehouse/defs/orders.py"]
    for name, text in written.items():
        (project / name).write_text(text)
    landed = orders(seed=56)
    folder = project / "data" / "landing" / "orders"
    folder.mkdir(parents=True)
    for name, lines in landed.items():
        (folder / f"_{name}").write_text("\n".join(lines) + "\n")
        (folder / f"_{name}").rename(folder / name)  # complete files appear by rename
    installed = files_under(site)

    run(["dg", "launch", "--assets", "*"], project, env)
    lap("dg launch")
    found = json.loads(run([python, "-c", READ_BACK], project, env).strip().splitlines()[-1])
    lap("read back")
    print(f"timings (s): {timings}")

    assert Path(found["package"]).is_relative_to(site), f"lakehouse_assets came from {found['package']}"
    assert Path(found["root"]) == (project / "data").resolve()
    bronze, silver = expected(landed)
    assert sum(bronze.values()) > sum(silver.values()) > 0
    got_bronze = Counter(
        (r["order_id"], r["customer"], r["amount"], r["_source_file"].rsplit("/", 1)[-1])
        for r in found["tables"]["bronze_orders"]
    )
    assert got_bronze == bronze
    assert Counter((r["order_id"], r["customer"], r["amount"]) for r in found["tables"]["silver_orders"]) == silver
    assert found["runs"] == ["SUCCESS"]
    assert found["checks"] == [["SUCCEEDED", True]], "amount_positive ran once and passed"
    # Everything the run wrote is the project's: nothing in site-packages or beside the virtualenv.
    assert files_under(site) == installed, "the run wrote into site-packages"
    assert not [p.name for p in venv.iterdir() if p.name in ("data", ".cache", "spark-warehouse", "metastore_db")]
    assert (project / "data" / "tables" / "silver_orders" / "_delta_log").is_dir()
    assert (project / "data" / "_spark" / "warehouse").is_dir()
