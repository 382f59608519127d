"""Runs as clients of a Spark Connect engine (``SPARK_REMOTE``): the same tables as embedded
runs, no JVM in the run's process, and an engine killed mid-run costs one clear failure and a
retry that leaves every table exact; one restarted mid-run is waited for by the run itself."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from devstack.connect_server import ConnectServer
from devstack.ports import free_port
from lakehouse_assets.generate import GeneratorOptions, generate
from lakehouse_assets.lib.engine.writing import batch as preloaded_module
from lakehouse_assets.lib.spark.engine_auth import token_file
from verification.contract import assert_tables_match_landed_files, table_history
from verification.crash import materialize_in_child
from verification.expected import expected_history
from verification.lakehouse import Lakehouse
from verification.processes import holding, processes_seen

CHAIN = "bronze_events,bronze_events_quarantine,silver_events,silver_events_quarantine,gold_hourly_revenue"
CUSTOMERS = "bronze_customers,bronze_customers_quarantine,silver_customers,silver_customers_quarantine"
JVM_BANNER = "log4j2-defaults.properties"  # printed by every Spark JVM as it starts
START = datetime(2026, 11, 20, 10, tzinfo=UTC)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    with (
        open(tmp_path_factory.mktemp("engine") / "engine.log", "ab") as log,
        ConnectServer(free_port(), log=log) as started,
    ):
        yield started


def _java_processes() -> dict[int, tuple[int, int]]:
    """pid -> (process group, parent) of every running ``java``."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0")[0]
            if argv0.endswith(b"/java") or argv0 == b"java":
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                found[int(entry.name)] = (os.getpgid(int(entry.name)), ppid)
        except (OSError, ValueError, IndexError):
            continue
    return found


@contextmanager
def jvms_started_outside(engine: ConnectServer) -> Iterator[set[int]]:
    """The JVMs seen while the block runs that are neither the engine's nor this test process's."""
    assert engine.process is not None
    engine_group, foreign, done = os.getpgid(engine.process.pid), set(), threading.Event()

    def watch() -> None:
        while not done.is_set():
            foreign.update(pid for pid, (group, parent) in _java_processes().items()
                           if group != engine_group and parent != os.getpid())  # fmt: skip
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield foreign
    finally:
        done.set()
        watcher.join()


@pytest.mark.slow
def test_runs_through_the_engine_equal_the_landed_answers(tmp_path: Path, spark, engine: ConnectServer) -> None:
    lh = Lakehouse(tmp_path / "lakehouse", spark, None)  # type: ignore[arg-type] - only its tables are read
    remote = {"SPARK_REMOTE": engine.url}
    with jvms_started_outside(engine) as foreign:
        for round_, files in enumerate((2, 1)):
            generate(lh.paths, GeneratorOptions(files=files, rows=150, seed=40 + round_, start=START), ["events"])
            run = materialize_in_child(tmp_path, CHAIN, env=remote)
            assert run.returncode == 0, run.output[-3000:]
        generate(lh.paths, GeneratorOptions(files=2, rows=60, seed=45, start=START), ["customers"])
        run = materialize_in_child(tmp_path, CUSTOMERS, env=remote)
        assert run.returncode == 0, run.output[-3000:]
    assert not foreign, f"JVMs other than the engine's ran during the runs: {sorted(foreign)}"
    assert JVM_BANNER not in (tmp_path / "child.log").read_text(), "a run started its own Spark JVM"
    assert_tables_match_landed_files(lh)
    assert table_history(lh) == expected_history(lh.root)[0]
    # Tables by name on the engine: the SQL command line, a client like any other.
    env = {**os.environ, **remote, "LAKEHOUSE_ROOT": str(lh.root)}
    for name in ("silver_events", "silver_customers"):
        query = subprocess.run([sys.executable, "-m", "lakehouse_assets.sql", f"SELECT count(*) AS rows FROM {name}"],
                               env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert query.returncode == 0, query.stderr[-2000:]
        assert re.search(rf"│\s*{lh.table(name).count()}\s*│", query.stdout), query.stdout
    # The event log through the engine (the command syncs the runs' events first), then through
    # this process's embedded session: the same rows, adding up to the tables the runs wrote.
    events = "SELECT table_name, sum(rows_written) AS w, count(*) AS n FROM _lakehouse_events WHERE event_type = 'run' GROUP BY 1"
    query = subprocess.run([sys.executable, "-m", "lakehouse_assets.sql", events],
                           env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert query.returncode == 0, query.stderr[-2000:]
    embedded = {r["table_name"]: (r["w"], r["n"]) for r in spark.sql(events.replace(
        "_lakehouse_events", f"delta.`{lh.paths.table('_lakehouse_events')}`")).collect()}  # fmt: skip
    assert embedded["bronze_events"] == (lh.table("bronze_events").count(), 2), embedded  # two runs, appends
    assert embedded["bronze_customers"][1] == 1, embedded
    for table, (written, runs) in embedded.items():
        assert re.search(rf"│\s*{table}\s*│\s*{written}\s*│\s*{runs}\s*│", query.stdout), query.stdout
    missing = subprocess.run([sys.executable, "-m", "lakehouse_assets.sql", "SELECT * FROM no_such_table"],
                             env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert missing.returncode == 1 and "Traceback" not in missing.stderr, missing.stderr[-2000:]
    assert "TABLE_OR_VIEW_NOT_FOUND" in missing.stderr and "silver_events" in missing.stderr, missing.stderr


@pytest.mark.slow
def test_an_engine_restarted_mid_run_is_waited_for_and_the_same_run_ends_exact(
    tmp_path: Path, spark, engine: ConnectServer
) -> None:
    """As a service manager would: the engine is SIGKILLed while a micro-batch runs and started
    again on the same port 3 s later. The step retries its table on a new session; nobody re-runs."""
    lh = Lakehouse(tmp_path / "lakehouse", spark, None)  # type: ignore[arg-type]
    remote = {"SPARK_REMOTE": engine.url, "LAKEHOUSE_TRANSIENT_BACKOFF_SECONDS": "2"}
    generate(lh.paths, GeneratorOptions(files=2, rows=150, seed=63, start=START), ["events"])

    log = tmp_path / "child.log"
    killer = threading.Thread(target=_kill_when_batch_runs, args=(engine, log, 3.0), daemon=True)
    killer.start()
    run = materialize_in_child(tmp_path, CHAIN, env=remote, timeout=600)
    killer.join()
    assert run.returncode == 0, run.output[-3000:]
    assert "was unreachable or restarted; trying " in log.read_text(), run.output[-3000:]
    assert_tables_match_landed_files(lh)


@pytest.mark.slow
def test_an_engine_that_stays_away_fails_the_run_in_one_sentence_and_the_next_run_is_exact(
    tmp_path: Path, spark, engine: ConnectServer
) -> None:
    lh = Lakehouse(tmp_path / "lakehouse", spark, None)  # type: ignore[arg-type]
    remote = {"SPARK_REMOTE": engine.url, "LAKEHOUSE_TRANSIENT_TRIES": "2", "LAKEHOUSE_TRANSIENT_BACKOFF_SECONDS": "1"}
    generate(lh.paths, GeneratorOptions(files=2, rows=150, seed=61, start=START), ["events"])

    log = tmp_path / "child.log"
    killer = threading.Thread(target=_kill_when_batch_runs, args=(engine, log), daemon=True)
    killer.start()
    run = materialize_in_child(tmp_path, CHAIN, env=remote, timeout=300)
    killer.join()
    assert run.returncode not in (0, None)
    assert "was unreachable or restarted; gave up after 2 tries" in log.read_text(), run.output[-3000:]

    engine.start()
    retry = materialize_in_child(tmp_path, CHAIN, env=remote)
    assert retry.returncode == 0, retry.output[-3000:]
    assert_tables_match_landed_files(lh)


def _kill_when_batch_runs(engine: ConnectServer, log: Path, restart_after: float | None = None) -> None:
    """SIGKILL the engine once the run's first query reports a batch (and start it again on the
    same port ``restart_after`` seconds later)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if log.exists() and ": batch " in log.read_text(errors="replace"):  # the run creates it
            break
        time.sleep(0.1)
    engine.kill()
    if restart_after is not None:
        time.sleep(restart_after)
        engine.start()


FORKED_QUERIES = """
import os, sys
from lakehouse_assets.lib.spark.session import engine_session

spark = engine_session(sys.argv[1])
source, out = sys.argv[2], sys.argv[3]

def record(batch, batch_id):
    parent = os.getppid()
    with open(f"/proc/{parent}/cmdline", "rb") as f:
        command = f.read().replace(b"\\0", b" ").decode()
    rows = sorted(r.value for r in batch.collect())
    with open(out, "a") as f:
        f.write(f"{os.getpid()}\\t{parent}\\t{command}\\t{','.join(rows)}\\n")

for i in range(3):
    (spark.readStream.format("text").load(source).writeStream.trigger(availableNow=True)
     .option("checkpointLocation", f"{out}.checkpoint-{i}").foreachBatch(record).start().awaitTermination())
"""


@pytest.mark.slow
def test_streaming_workers_are_forked_warm_and_see_their_own_batches(tmp_path: Path, engine: ConnectServer) -> None:
    """The engine's foreachBatch workers, after the first, are forked from its warm process
    (lakehouse_assets.lib.accel.warm_workers): each runs its own query's rows, in a process of
    its own, and the warm process lives in the engine's process group."""
    source, out = tmp_path / "source", tmp_path / "seen.tsv"
    source.mkdir()
    (source / "a.txt").write_text("x\ny\n")
    (source / "b.txt").write_text("z\n")
    script = tmp_path / "queries.py"
    script.write_text(FORKED_QUERIES)
    run = subprocess.run([sys.executable, str(script), engine.url, str(source), str(out)],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    seen = [line.split("\t") for line in out.read_text().splitlines()]
    assert [rows for *_, rows in seen] == ["x,y,z"] * 3  # every query read every row, once
    assert len({pid for pid, *_ in seen}) == 3, seen  # a worker per query
    warm = [(int(parent), command) for _, parent, command, _ in seen if "lib.accel.warm_workers" in command]
    assert len(warm) >= 2, f"fewer than two of three workers were forked warm: {seen}"
    assert engine.process is not None
    assert all(os.getpgid(parent) == os.getpgid(engine.process.pid) for parent, _ in warm)

    # An edited framework module: the warm process steps aside and a new one serves the next workers.
    os.utime(preloaded_module.__file__)
    out = tmp_path / "seen-again.tsv"  # new checkpoints too
    again = subprocess.run([sys.executable, str(script), engine.url, str(source), str(out)],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    seen = [line.split("\t") for line in out.read_text().splitlines()]
    assert [rows for *_, rows in seen] == ["x,y,z"] * 3
    successors = {int(parent) for _, parent, command, _ in seen if "lib.accel.warm_workers" in command}
    assert successors and not successors & {parent for parent, _ in warm}, (warm, seen)


@pytest.mark.slow
def test_the_engine_serves_only_clients_that_send_its_token(tmp_path: Path, engine: ConnectServer) -> None:
    """A client without the engine's token, or with another, is refused in one sentence; the
    project's clients read the token from its file and are served; the
    token is on no command line of the engine, its workers or its clients."""
    token = token_file().read_text().strip()
    assert stat.S_IMODE(token_file().stat().st_mode) == 0o600
    other = tmp_path / "other-token"
    other.write_text("not-the-engine-token\n")
    other.chmod(0o600)
    env = {**os.environ, "SPARK_REMOTE": engine.url, "LAKEHOUSE_ROOT": str(tmp_path / "lakehouse")}
    query = [sys.executable, "-m", "lakehouse_assets.sql", "SELECT 41 + 1 AS answer"]
    files = {"served": token_file(), "no token sent": tmp_path / "missing", "wrong token": other}
    with processes_seen() as seen:
        answers = {
            why: subprocess.run(query, env={**env, "LAKEHOUSE_ENGINE_TOKEN_FILE": str(file)},
                                capture_output=True, text=True, timeout=300)
            for why, file in files.items()
        }  # fmt: skip
    served = answers.pop("served")
    assert served.returncode == 0 and re.search(r"│\s*42\s*│", served.stdout), served.stderr[-2000:]
    for why, refused in answers.items():
        assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr[-2000:]
        assert f"the Spark engine refused this client ({why})" in refused.stderr, refused.stderr[-2000:]
        assert "│" not in refused.stdout, refused.stdout  # no result table was printed
    assert not holding(seen, [token]), "the engine's token is on a command line"
