"""The benchmark suite: ``make bench`` (or ``python -m bench.run [--quick]``).

Runs every measurement on freshly generated data under ``$BENCH_WORKDIR`` (default
``.cache/bench``), each in fresh processes, and writes ``bench/results.md``,
``bench/results.json`` and ``bench/history_scaling.png``. Every figure is the median over
``--reps`` runs. ``--quick`` (or ``BENCH_QUICK=1``) is a small configuration for trying the
harness; the committed results say which configuration produced them.

Sections (issue 7): 1 incremental run cost vs a plain PySpark script, 2 per-table overhead,
3 bronze throughput vs plain Spark batch and DuckDB, 4 history scaling, 5 landing-to-gold
latency under ``dagster dev``, 6 peak memory and state store size.

Everything that measures no time runs first, side by side (``--parallel``, four at a time):
section 4's process preparing one data root per history size (it also ingests section 1's
history into the framework's root and runs section 6's runs, whose figures are sizes, then
waits), the run ingesting the largest history (it also trains the driver's class archive when setup has not
built it yet), the plain script's warm-up run, section 3's batch and section 5's ``dagster dev``
with its first file. Then the timed sections run one at a
time: 5, 1 with 2, 4 (the waiting process, told to go), 3.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BENCH = REPO / "bench"
EVENTS_CHAIN = "bronze_events,bronze_events_quarantine,silver_events,silver_events_quarantine,gold_hourly_revenue"
CHAIN_TABLES = ["bronze_events", "silver_events", "gold_hourly_revenue"]
STATEFUL = ["gold_user_sessions", "gold_ad_attribution"]
# The stateful tables and everything they read (silver_events reads silver_customers, which may be missing).
STATE_CHAIN = ",".join([
    "bronze_events", "bronze_events_quarantine", "silver_events", "silver_events_quarantine", "gold_user_sessions",
    "bronze_ad_impressions", "bronze_ad_impressions_quarantine", "bronze_ad_clicks", "bronze_ad_clicks_quarantine",
    "gold_ad_attribution",
])  # fmt: skip
T0 = datetime(2026, 1, 5, tzinfo=UTC)


@dataclass
class Config:
    name: str
    reps: int = 3
    overhead_reps: int = 2
    base_files: int = 10
    small_rows: int = 200
    big_files: int = 10
    big_rows: int = 100_000
    throughput_reps: int = 3
    levels: list[int] = field(default_factory=lambda: [10, 100, 1000, 10000])
    history_rows: int = 10
    scaling_reps: int = 3
    drops: int = 10
    state_runs: int = 3


FULL = Config("full")
QUICK = Config(
    "quick", reps=2, overhead_reps=1, base_files=3, small_rows=100, big_files=4, big_rows=5_000, throughput_reps=1,
    levels=[10, 100], history_rows=10, scaling_reps=1, drops=2, state_runs=3,
)  # fmt: skip


class Budget:
    """The suite's time budget: a section adds repetitions beyond its minimum only while the
    budget lasts (every figure is always a median of at least its minimum)."""

    def __init__(self, minutes: float):
        self.deadline = time.monotonic() + minutes * 60

    def more(self, done: int, minimum: int, maximum: int) -> bool:
        return done < minimum or (done < maximum and time.monotonic() < self.deadline)


BUDGET = Budget(10**6)


def log(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", flush=True)


def median(values: list[float]) -> float:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


# -- processes --------------------------------------------------------------------------------


@dataclass
class Proc:
    wall_s: float
    peak_rss: int
    rc: int
    out: str

    def json(self) -> dict:
        for line in reversed(self.out.splitlines()):
            if line.startswith("BENCH_JSON "):
                return json.loads(line.removeprefix("BENCH_JSON "))
        raise RuntimeError(f"no BENCH_JSON in output (rc={self.rc}):\n{self.out[-3000:]}")


class Gate:
    """Hand-over with a process that prepares first and measures later: it prints
    ``BENCH_READY {json}`` when prepared, then waits for a line on its stdin (``go``)."""

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.go = threading.Event()
        self.prepared: dict | None = None
        self.peak_rss_when_ready = 0
        self.cpu_when_ready = 0.0
        self.pid = 0


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 1800, check: bool = True,
        gate: Gate | None = None) -> Proc:  # fmt: skip
    """Run ``cmd`` in its own process group; sample the whole tree's resident memory."""
    full_env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})}
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.PIPE if gate else None, start_new_session=True)  # fmt: skip
    peak = 0
    cpu: dict[int, float] = {}  # CPU seconds of every process of the tree, as last seen
    chunks: list[str] = []
    if gate:
        gate.pid = proc.pid

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            chunks.append(line)
            if gate and line.startswith("BENCH_READY "):
                gate.prepared = json.loads(line.removeprefix("BENCH_READY "))
                gate.peak_rss_when_ready = peak
                gate.cpu_when_ready = round(sum(cpu.values()), 1)
                gate.ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    root = psutil.Process(proc.pid)
    told = False
    try:
        while proc.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
                for p in tree:
                    times = p.cpu_times()
                    cpu[p.pid] = times.user + times.system
            except psutil.Error:
                pass
            if time.monotonic() - started > timeout:
                os.killpg(proc.pid, 9)
                raise TimeoutError(f"{cmd[:3]} took over {timeout}s")
            if gate and gate.go.is_set() and not told:
                proc.stdin.write("go\n")  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
                told = True
            # A process waiting for its turn is sampled seldom: the sections measured meanwhile
            # should have the machine.
            time.sleep(1.0 if gate and gate.ready.is_set() and not told else 0.1)
    finally:
        if gate:
            gate.ready.set()  # never leave a waiter hanging, even when the process failed
    wall = time.monotonic() - started
    reader.join(timeout=10)
    try:  # nothing it started may outlive it (a JVM left behind would skew the next figure)
        os.killpg(proc.pid, 9)
    except ProcessLookupError:
        pass
    out = "".join(chunks)
    log(f"   ({label(cmd)}: {wall:.0f}s, {sum(cpu.values()):.0f} CPU-s)")
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed (rc={proc.returncode}):\n{out[-4000:]}")
    return Proc(round(wall, 3), peak, proc.returncode, out)


def label(cmd: list[str]) -> str:
    """A short name for a command: ``dagster asset materialize``, ``dagster_run.py``, ``python -c``."""
    program = Path(cmd[0]).name
    if program.startswith("python") and len(cmd) > 1:
        return "python -c" if cmd[1] == "-c" else Path(cmd[1]).name
    return " ".join([program, *cmd[1:3]])


class Scenario:
    """A data root and a Dagster instance (the repository's dagster.yaml, storage moved here)."""

    def __init__(self, workdir: Path, name: str, fresh: bool = True):
        self.dir = workdir / name
        if fresh:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.root = self.dir / "data"
        self.home = self.dir / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        text = (REPO / "dagster.yaml").read_text()
        (self.home / "dagster.yaml").write_text(text.replace("base_dir: data/dagster", f"base_dir: {self.home}/dagster"))
        landing = self.root / "landing" / "events"
        self.landed = len(list(landing.iterdir())) if landing.exists() else 0
        from lakehouse_assets.lib.settings import LakehousePaths

        self.paths = LakehousePaths(str(self.root))

    @property
    def env(self) -> dict[str, str]:
        return {"LAKEHOUSE_ROOT": str(self.root), "DAGSTER_HOME": str(self.home)}

    def land(self, files: int, rows: int, mirror: list[Scenario] = (), sources: list[str] | None = None,
             start: datetime | None = None, step: timedelta = timedelta(minutes=5), **options) -> list[Path]:  # fmt: skip
        """Land ``files`` events files, one generator call each (every file an hour slice that
        starts ``step`` after the previous one), and the same files into ``mirror`` roots."""
        from lakehouse_assets.generate import GeneratorOptions, generate

        written = []
        for _ in range(files):
            at = start or (T0 + step * self.landed)
            opts = GeneratorOptions(files=1, rows=rows, seed=self.landed, start=at, **options)
            written += generate(self.paths, opts, sources or ["events"])
            self.landed += 1
        for other in mirror:
            for path in written:
                rel = path.relative_to(self.root)
                target = other.root / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
            other.landed = self.landed
        return written

    def dagster_cli(self, select: str = EVENTS_CHAIN, traced: bool = False) -> tuple[Proc, dict | None]:
        """``dagster asset materialize`` in a fresh process; ``traced``: with the framework's timings
        recorded from inside it (``bench/trace/sitecustomize.py``), returned like ``dagster_run.py``'s."""
        env = dict(self.env)
        trace = self.dir / "trace.json"
        if traced:
            trace.unlink(missing_ok=True)
            env |= {"LAKEHOUSE_BENCH_TRACE": str(trace), "PYTHONPATH": f"{REPO}:{BENCH / 'trace'}"}
        p = run([str(BIN / "dagster"), "asset", "materialize", "-m", "lakehouse_assets", "--select", select], env)
        return p, json.loads(trace.read_text()) if traced else None

    def dagster_instrumented(self, select: str = EVENTS_CHAIN, *extra: str) -> tuple[Proc, dict]:
        p = run([str(BIN / "python"), str(BENCH / "dagster_run.py"), "--select", select, *extra], self.env)
        return p, p.json()

    def plain(self, *extra: str) -> tuple[Proc, dict]:
        p = run([str(BIN / "python"), str(BENCH / "plain_pipeline.py"), "--root", str(self.root), *extra])
        return p, p.json()


# -- machine ----------------------------------------------------------------------------------


def machine() -> dict:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    versions = {}
    for pkg in ("dagster", "pyspark", "delta-spark", "duckdb"):
        try:
            from importlib.metadata import version

            versions[pkg] = version(pkg)
        except Exception:  # noqa: BLE001
            versions[pkg] = "?"
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "os": platform.platform(), "python": platform.python_version(), "java": java[0] if java else "?",
        **versions,
    }  # fmt: skip


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


# -- 1 + 2: incremental run cost and per-table overhead ---------------------------------------


def incremental_scenarios(cfg: Config, workdir: Path) -> tuple[Scenario, Scenario]:
    """Both data roots of section 1 with the same history landed (ingested by the warm-up runs)."""
    d, p = Scenario(workdir, "incremental-dagster"), Scenario(workdir, "incremental-plain")
    d.land(cfg.base_files, cfg.small_rows, mirror=[p])
    return d, p


def bench_incremental(cfg: Config, d: Scenario, p: Scenario) -> dict:
    """Section 1 (and 2): the history was ingested by unmeasured warm-up runs of both sides."""
    dagster, plain, rss_d, rss_p, plain_splits, cli_splits = [], [], [], [], [], []
    i = 0
    while BUDGET.more(i, min(3, cfg.reps), cfg.reps):
        d.land(1, cfg.small_rows, mirror=[p])
        order = [("d", d), ("p", p)] if i % 2 == 0 else [("p", p), ("d", d)]
        for kind, sc in order:
            if kind == "d":
                r, traced = sc.dagster_cli(traced=True)
                dagster.append(r.wall_s)
                rss_d.append(r.peak_rss)
                cli_splits.append(split_dagster(traced))
            else:
                r, jp = sc.plain()
                plain.append(r.wall_s)
                rss_p.append(r.peak_rss)
                plain_splits.append(split_plain(jp))
        log(f"   rep {i + 1}: dagster CLI {dagster[-1]:.1f}s, plain {plain[-1]:.1f}s")
        i += 1
    result = {
        "dagster_s": dagster, "plain_s": plain, "dagster_median_s": median(dagster), "plain_median_s": median(plain),
        "ratio": median(dagster) / median(plain), "dagster_peak_rss": rss_d, "plain_peak_rss": rss_p,
    }  # fmt: skip
    one_file = {"dagster_wall_s": median(dagster), "plain_wall_s": median(plain),
                "dagster": median_tree(cli_splits), "plain": median_tree(plain_splits)}  # fmt: skip
    overhead = bench_overhead(cfg, d, p)
    result["verify"] = overhead.pop("verify") or p.plain("--verify-against", str(d.root))[1]["verify"]
    result["overhead"] = {**overhead, "one_small_file": one_file}
    log(f"   same tables as the framework: {all(v['identical'] for v in result['verify'].values())}")
    return result


PHASES = ["queryPlanning", "getBatch", "latestOffset", "addBatch", "walCommit", "commitOffsets", "triggerExecution"]


def phase_sums(progress: list[dict]) -> dict[str, float]:
    sums = {k: 0.0 for k in PHASES}
    for entry in progress:
        for k in PHASES:
            sums[k] += entry["durationMs"].get(k, 0) / 1000
    sums["batches"] = sum(1 for e in progress if e["numInputRows"] > 0)
    return sums


def split_dagster(res: dict) -> dict:
    """One instrumented run -> seconds per component, per table and for the whole process."""
    run_ = res["runs"][0]
    tables = {}
    spark_start = run_["spark_start_s"]
    first = True
    for name in CHAIN_TABLES:
        t = run_["tables"].get(name, {})
        ph = phase_sums(run_["progress"].get(name, []))
        step = run_["steps_s"].get(name, 0.0)
        runner = t.get("runner_s", 0.0)
        own = {
            "spark_start": spark_start if first else 0.0,
            "query_planning": ph["queryPlanning"],
            "source_offsets_listing": ph["latestOffset"] + ph["getBatch"],
            "write_and_delta_commit": ph["addBatch"],
            "checkpoint_wal_and_commit": ph["walCommit"] + ph["commitOffsets"],
            "query_other": max(ph["triggerExecution"] - ph["queryPlanning"] - ph["latestOffset"] - ph["getBatch"]
                               - ph["addBatch"] - ph["walCommit"] - ph["commitOffsets"], 0.0),
            "query_start_stop_setup": max(runner - ph["triggerExecution"], 0.0),
            "metadata": t.get("metadata_s", 0.0),
            "checks": t.get("checks_s", 0.0),
            "dagster_step_bookkeeping": max(step - runner - t.get("metadata_s", 0.0) - t.get("checks_s", 0.0)
                                            - (spark_start if first else 0.0), 0.0),
            "step_total": step,
            "micro_batches": ph["batches"],
        }  # fmt: skip
        first = False
        tables[name] = own
    steps_sum = sum(run_["steps_s"].values())
    process = {
        "python_and_dagster_import": res["import_s"] + res["definitions_s"],
        "run_bookkeeping_outside_steps": max(run_["run_s"] - steps_sum, 0.0),
        "materialize_call_outside_run": max(run_["wall_s"] - run_["run_s"], 0.0),
    }
    return {"tables": tables, "process": process}


def split_plain(res: dict) -> dict:
    tables = {}
    for name in CHAIN_TABLES:
        t = res["tables"].get(name, {"duration_s": 0.0, "progress": []})
        ph = phase_sums(t["progress"])
        tables[name] = {
            "query_planning": ph["queryPlanning"], "source_offsets_listing": ph["latestOffset"] + ph["getBatch"],
            "write_and_delta_commit": ph["addBatch"], "checkpoint_wal_and_commit": ph["walCommit"] + ph["commitOffsets"],
            "query_start_stop_setup": max(t["duration_s"] - ph["triggerExecution"], 0.0), "table_total": t["duration_s"],
        }  # fmt: skip
    return {"tables": tables, "process": {"import": res["import_s"], "spark_start": res["spark_start_s"]}}


def median_tree(trees: list[dict]) -> dict:
    if isinstance(trees[0], dict):
        return {k: median_tree([t[k] for t in trees]) for k in trees[0]}
    return round(median(trees), 3)


def bench_overhead(cfg: Config, d: Scenario, p: Scenario) -> dict:
    """A run with no new data, instrumented, against the plain script. (The one-small-file split
    comes from section 1's own runs: the CLI records its timings from inside, see ``dagster_cli``.)"""
    walls_d, walls_p, splits_d, splits_p = [], [], [], []
    i = 0
    verified = None
    while BUDGET.more(i, cfg.overhead_reps, cfg.overhead_reps):
        rd, jd = d.dagster_cli(traced=True)
        last = not BUDGET.more(i + 1, cfg.overhead_reps, cfg.overhead_reps)
        # The last plain run also compares its tables with the framework's, after its own timings
        # were taken (the comparison's time is left out of its wall time).
        rp, jp = p.plain(*(["--verify-against", str(d.root)] if last else []))
        if last:
            verified = jp["verify"]
        walls_d.append(rd.wall_s)
        walls_p.append(rp.wall_s - jp.get("verify_s", 0.0))
        splits_d.append(split_dagster(jd))
        splits_p.append(split_plain(jp))
        log(f"2. overhead no_new_data rep {i + 1}: dagster CLI {walls_d[-1]:.1f}s, plain {walls_p[-1]:.1f}s")
        i += 1
    return {"no_new_data": {
        "dagster_wall_s": median(walls_d), "plain_wall_s": median(walls_p),
        "dagster": median_tree(splits_d), "plain": median_tree(splits_p),
    }, "verify": verified}  # fmt: skip


# -- 3: throughput ----------------------------------------------------------------------------

DUCKDB_SCRIPT = """
import duckdb, sys, time, json
src, out = sys.argv[1], sys.argv[2]
con = duckdb.connect()
con.execute("SET threads TO 2")
t = time.monotonic()
con.execute(f\"\"\"COPY (SELECT * FROM read_json('{src}/*.jsonl*', format='newline_delimited',
    ignore_errors=true, union_by_name=true, filename=true)) TO '{out}' (FORMAT parquet)\"\"\")
elapsed = time.monotonic() - t
rows = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()[0]
print("BENCH_JSON " + json.dumps({"duration_s": elapsed, "rows": rows}))
"""


def throughput_files(cfg: Config, workdir: Path) -> dict:
    """The large batch of section 3: one generated file of ``big_rows`` events and ``big_files - 1``
    copies of it under other names, two in ten gzipped (the generator gzips about a quarter; the
    parsing cost is per byte, so copies cost the readers what new events would; generating a
    million events in Python would cost the preparation minutes). Hard-linked into each
    repetition's root."""
    import gzip

    src = Scenario(workdir, "throughput-source")
    log(f"3. throughput: generating {cfg.big_rows:,} events, {cfg.big_files} files of them")
    (first,) = src.land(1, cfg.big_rows, gzip=0.0)
    with open(first, "rt") as handle:
        lines_per_file = sum(1 for line in handle if line.strip())
    files = [first]
    for k in range(1, cfg.big_files):
        if k % 4 == 2:  # every fourth file gzipped
            copy = first.with_name(f"{first.stem}-copy{k:02d}.jsonl.gz")
            with open(first, "rb") as raw, gzip.open(copy, "wb", compresslevel=6) as packed:
                shutil.copyfileobj(raw, packed)
        else:
            copy = first.with_name(f"{first.stem}-copy{k:02d}.jsonl")
            os.link(first, copy)
        files.append(copy)
    return {"files": files, "lines": lines_per_file * len(files), "size": sum(f.stat().st_size for f in files)}


def bench_throughput(cfg: Config, workdir: Path, batch: dict) -> dict:
    files, lines, size = batch["files"], batch["lines"], batch["size"]
    fw, plain, duck, fw_step = [], [], [], []
    i = 0
    while BUDGET.more(i, min(2, cfg.throughput_reps), cfg.throughput_reps):
        i += 1
        sc = Scenario(workdir, "throughput-run")
        landing = sc.root / "landing" / "events"
        landing.mkdir(parents=True)
        for f in files:
            os.link(f, landing / f.name)  # same bytes, no copy (a hard link, not a symlink)
        # The figure is the query's time; the checks (re-reading every file) would only add minutes.
        _, j = sc.dagster_instrumented("bronze_events,bronze_events_quarantine", "--no-checks")
        r = j["runs"][0]
        rows = r["metadata"]["bronze_events"]["rows_read"]
        assert rows == lines, (rows, lines)
        fw.append(r["tables"]["bronze_events"]["runner_s"])
        fw_step.append(r["steps_s"]["bronze_events"])
        _, jp = sc.plain("--batch-bronze", str(sc.dir / "plain-batch"))
        plain.append(jp["batch_bronze"]["duration_s"])
        p = run([str(BIN / "python"), "-c", DUCKDB_SCRIPT, str(landing), str(sc.dir / "duck.parquet")])
        jd = p.json()
        duck.append(jd["duration_s"])
        log(f"   rep {i}: framework query {fw[-1]:.1f}s (step {fw_step[-1]:.1f}s), plain batch {plain[-1]:.1f}s, duckdb {duck[-1]:.1f}s")
    return {
        "files": cfg.big_files, "rows": lines, "bytes": size, "framework_query_s": fw, "framework_step_s": fw_step,
        "plain_batch_s": plain, "duckdb_s": duck, "duckdb_rows": jd["rows"],
        "framework_rows_per_s": lines / median(fw), "framework_step_rows_per_s": lines / median(fw_step),
        "plain_rows_per_s": lines / median(plain), "duckdb_rows_per_s": lines / median(duck),
    }  # fmt: skip


# -- 5: latency -------------------------------------------------------------------------------


def _latency_script():
    spec = importlib.util.spec_from_file_location("measure_latency", REPO / "scripts" / "measure_latency.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


LATENCY_TIMEOUT = float(os.environ.get("BENCH_LATENCY_TIMEOUT", "600"))


def latency_server(workdir: Path) -> tuple:
    """A temporary ``dagster dev`` with the warm Spark server, as ``make dev`` starts it, on its own
    instance and data root, with a first file landed so every table exists (not measured)."""
    from lakehouse_assets.lib.settings import LakehousePaths
    from lakehouse_assets.orchestration.devserver import DagsterDev

    paths = LakehousePaths(str(workdir / "latency" / "data"))
    server = DagsterDev(root=paths.root, isolated=True, warm_spark=True)
    log(f"5. latency: starting dagster dev on {server.url} (data root {paths.root})")
    server.start()
    try:
        _latency_script().warm_up(server, paths, 200, LATENCY_TIMEOUT)
    except BaseException:
        server.stop()
        raise
    return server, paths


def tree_cpu(server) -> float:
    """CPU seconds used so far by ``dagster dev`` (webserver, daemon, code server, runs) and its
    warm Spark server."""
    total = 0.0
    for top in (server.process, getattr(server, "warm_spark", None)):
        if top is None:
            continue
        try:
            tree = psutil.Process(top.pid)
            for p in [tree, *tree.children(recursive=True)]:
                times = p.cpu_times()
                total += times.user + times.system + times.children_user + times.children_system
        except psutil.Error:
            pass
    return round(total, 1)


def bench_latency(cfg: Config, server, paths) -> dict:
    """``scripts/measure_latency.py``'s drops against the server prepared by :func:`latency_server`."""
    script = _latency_script()
    log(f"5. latency: {cfg.drops} drops, the landing sensor launching every run")
    t = time.monotonic()
    parts: list[dict] = []
    try:
        drops = script.measure(server, paths, cfg.drops, 200, LATENCY_TIMEOUT, parts)
    finally:
        server.stop()
    return {
        "ok": True, "drops_s": drops, "wall_s": round(time.monotonic() - t, 1),
        "p50_s": script.percentile(drops, 0.5), "p95_s": script.percentile(drops, 0.95), "tail": "",
        "parts_median_s": script.median_parts(parts), "parts_drops": sum(1 for p in parts if p),
    }  # fmt: skip


# -- the class archive ------------------------------------------------------------------------


def missing_class_archive() -> Path | None:
    """Where the driver's class archive (``lakehouse_assets/lib/class_archive.py``) goes when it
    is missing. `make bench` leaves it to the preparation: the run that ingests section 4's
    largest history trains it (the events chain, as setup's training run), instead of a
    training run of its own before everything else. Only section 1's runs must have it, and
    they start after preparation."""
    from lakehouse_assets.lib import class_archive
    from lakehouse_assets.lib.jars import cached_jars

    if os.environ.get("LAKEHOUSE_CLASS_ARCHIVE", "1") == "0":
        return None
    target = class_archive.archive_path(cached_jars())
    return None if target.exists() else target


# -- 4: history scaling, prepared early, measured late -----------------------------------------


class History:
    """Section 4 (``scaling``) and section 6's runs (``state``) in one process (``dagster_run.py``,
    one JVM; see its ``prepare_and_measure``). Its preparation runs alongside the bench's other
    preparation: one data root per history size, each ingested by an unmeasured run, section 1's
    framework root (``warm``: its history ingested in this warm JVM rather than by a cold CLI run)
    and section 6's runs. The measured runs then wait until the sections measured before them are
    done. They share a warm JVM on purpose: the cold start every
    fresh process pays (section 1) is the same at every size and would only dilute what grows
    with the history."""

    def __init__(self, cfg: Config, workdir: Path, warm: list[Scenario], state: bool, scaling: bool = True):
        self.cfg = cfg
        self.levels = sorted(cfg.levels) if scaling else []
        self.warm = warm
        self.state_dir = Scenario(workdir, "state") if state else None
        self.gate = Gate()
        self.level_dirs = [Scenario(workdir, f"scaling-{n}") for n in self.levels]
        # The ends of the curve make the target's ratio: full repetitions there, one fewer between.
        reps = cfg.scaling_reps
        self.level_runs = [reps if i in (0, len(self.levels) - 1) else max(1, reps - 2)
                           for i in range(len(self.levels))]  # fmt: skip
        self._pool = ThreadPoolExecutor(1)
        self._proc = None
        # The largest root's history (most of the preparation's work) is landed and ingested by a
        # process of its own, side by side with the others; the measuring process opens it later.
        self.elsewhere = self.levels[-1:] if len(self.levels) > 1 else []
        self._largest = None

    def _prepare_largest(self) -> dict:
        from lakehouse_assets.lib import class_archive

        sc, n = self.level_dirs[-1], self.levels[-1]
        archive = missing_class_archive()
        env = dict(sc.env)
        if archive:
            log("class archive: the largest history's ingest run trains it")
            partial = archive.with_suffix(f".{os.getpid()}.partial")
            archive.parent.mkdir(parents=True, exist_ok=True)
            env[class_archive.DUMP_ENV] = str(partial)
        p = run([str(BIN / "python"), str(BENCH / "dagster_run.py"), "--select", EVENTS_CHAIN, "--land-history", str(n),
                 "--history-rows", str(self.cfg.history_rows), "--no-checks"], env)  # fmt: skip
        j = p.json()
        if archive and not class_archive.install(partial, archive):
            log("class archive: not written; section 1's runs start without it")
        if not j["runs"][0]["success"]:
            raise RuntimeError(f"the ingest run of the {n:,}-file root failed")
        return {"landing_s": j["landing_s"], "ingest_run_s": j["runs"][0]["wall_s"]}

    def start(self, pool: ThreadPoolExecutor) -> None:
        cfg = self.cfg
        if self.levels:
            log(f"4. scaling: preparing data roots with {', '.join(f'{n:,}' for n in self.levels)} files ingested")
        if self.elsewhere:
            self._largest = pool.submit(self._prepare_largest)
        cmd = [str(BIN / "python"), str(BENCH / "dagster_run.py"), "--select", EVENTS_CHAIN,
               "--land-rows", str(cfg.small_rows), "--history-rows", str(cfg.history_rows),
               "--levels", ",".join(map(str, self.levels)), "--wait",
               "--level-dirs", ",".join(str(s.dir) for s in self.level_dirs),
               "--level-runs", ",".join(map(str, self.level_runs)),
               "--warm-dirs", ",".join(str(s.dir) for s in self.warm),
               "--ingested-elsewhere", ",".join(map(str, self.elsewhere))]  # fmt: skip
        if self.state_dir:
            log(f"6. state: {cfg.state_runs} runs of the stateful tables and their inputs, an hour of new data each")
            cmd += ["--state-dir", str(self.state_dir.dir), "--state-select", STATE_CHAIN,
                    "--state-runs", str(cfg.state_runs), "--state-du", ",".join(STATEFUL)]  # fmt: skip
        # Every root is opened by its folder; the environment only has to name one.
        env = next(sc.env for sc in [*self.level_dirs, *self.warm, self.state_dir] if sc)
        self._proc = self._pool.submit(run, cmd, env, 5400, True, self.gate)

    def wait_prepared(self) -> None:
        if self._largest:
            self._largest.result()
        self.gate.ready.wait()
        if self.gate.prepared is None:  # the process ended before it was prepared
            self._proc.result()  # type: ignore[union-attr]
            raise RuntimeError("the history process ended without preparing")

    def warmed(self) -> bool:
        """Section 1's framework root was ingested (its warm-up run succeeded)."""
        done = (self.gate.prepared or {}).get("warm_dirs")
        return bool(done) and all(done)

    def state_result(self) -> dict:
        """Section 6's runs, from the preparation (peak memory: the process up to then)."""
        runs = (self.gate.prepared or {}).get("state_runs") or []
        if not runs:
            raise RuntimeError("section 6's runs did not run")
        return {"series": state_series(runs), "peak_rss": self.gate.peak_rss_when_ready}

    def close(self) -> None:
        """Stop the process if it is still waiting (a section failed before it was measured)."""
        if self._proc and not self._proc.done() and self.gate.pid:
            try:
                os.killpg(self.gate.pid, 9)
            except ProcessLookupError:
                pass
        self._pool.shutdown(wait=True)

    def measure(self) -> dict:
        log(f"4. scaling: {', '.join(map(str, self.level_runs))} runs with one new file at "
            f"{', '.join(f'{n:,}' for n in self.levels)} files ingested")
        self.gate.go.set()
        proc = self._proc.result()  # type: ignore[union-attr]
        j = proc.json()
        levels: list[dict] = []
        for measured in j["levels"]:
            if measured["level"] in self.elsewhere:
                measured |= self._largest.result()  # type: ignore[union-attr]
            if not measured["ingest_success"] or not all(r["success"] for r in measured["runs"]):
                raise RuntimeError(f"a scaling run at {measured['level']} files failed")
            walls = [r["wall_s"] for r in measured["runs"]]
            splits = [split_dagster({"import_s": 0.0, "definitions_s": 0.0, "runs": [r]}) for r in measured["runs"]]
            levels.append({
                "files_before": measured["files_before"], "wall_s": walls, "median_s": median(walls),
                "split": median_tree(splits), "landing_s": measured["landing_s"],
                "ingest_run_s": measured["ingest_run_s"], "seen_files_log_bytes": measured["seen_files_log_bytes"],
            })  # fmt: skip
            log(f"4. scaling: after {measured['files_before']:,} files (history ingested in "
                f"{measured['ingest_run_s']:.0f}s during preparation), one new file: {', '.join(f'{w:.1f}' for w in walls)}s")
        base = levels[0]["median_s"]
        for lv in levels:
            lv["vs_first"] = lv["median_s"] / base
        warm_up = j["prepared"].get("warm_up") or {}
        return {"levels": levels, "warm": True, "warm_up_s": warm_up.get("wall_s"), "peak_rss": proc.peak_rss}


# -- 6: memory and state ----------------------------------------------------------------------


def state_series(runs: list[dict]) -> list[dict]:
    """Section 6's figures from its runs: state store size and rows after each."""
    return [
        {"run": i + 1, "success": r["success"], "wall_s": r["wall_s"], "state_bytes": r["state_bytes"],
         "state_rows": {t: r["metadata"].get(t, {}).get("state_rows") for t in STATEFUL}}
        for i, r in enumerate(runs)
    ]  # fmt: skip


# -- report -----------------------------------------------------------------------------------


def chart(scaling: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = scaling["levels"]
    x = [lv["files_before"] for lv in levels]
    total = [lv["median_s"] for lv in levels]
    bronze = [lv["split"]["tables"]["bronze_events"]["step_total"] for lv in levels]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(x, total, "o-", label="run with one new file (fresh process, events chain)")
    ax.plot(x, bronze, "s--", label="bronze_events step")
    ax.axhline(total[0] * 1.5, color="grey", linestyle=":", label=f"target: 1.5x the {x[0]}-file case")
    ax.set_xscale("log")
    ax.set_xlabel("landing files already ingested")
    ax.set_ylabel("seconds (median)")
    ax.set_ylim(bottom=0)
    ax.set_title("History scaling")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", default=os.environ.get("BENCH_QUICK") == "1")
    parser.add_argument("--only", default="1,3,4,5,6", help="sections to run (2 runs with 1)")
    parser.add_argument("--workdir", default=os.environ.get("BENCH_WORKDIR") or str(REPO / ".cache" / "bench"))
    parser.add_argument("--out", default=str(BENCH))
    for name in ("reps", "overhead_reps", "big_files", "big_rows", "drops", "state_runs", "throughput_reps", "scaling_reps"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int)
    parser.add_argument("--levels", help="comma-separated history sizes, e.g. 10,100,1000")
    parser.add_argument("--budget-min", type=float, default=float(os.environ.get("BENCH_BUDGET_MIN", 20)),
                        help="add repetitions beyond each section's minimum only until this many minutes (default 20)")
    parser.add_argument("--parallel", type=int, default=4,
                        help="preparation processes at a time, the history process included (default 4)")
    parser.add_argument("--prepare-only", action="store_true", help="stop after the preparation (a trial of it)")
    args = parser.parse_args(argv)
    cfg = Config(**{**asdict(QUICK if args.quick else FULL)})
    for name in ("reps", "overhead_reps", "big_files", "big_rows", "drops", "state_runs", "throughput_reps", "scaling_reps"):
        if getattr(args, name) is not None:
            setattr(cfg, name, getattr(args, name))
            cfg.name += f" {name}={getattr(args, name)}"
    if args.levels:
        cfg.levels = [int(x) for x in args.levels.split(",")]
        cfg.name += f" levels={args.levels}"
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sections = set(args.only.split(","))
    started = time.monotonic()
    results: dict = {
        "config": asdict(cfg), "machine": machine(), "started": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "load_start": load(),
    }  # fmt: skip
    log(f"bench ({cfg.name}) on {results['machine']['cores']} cores, load {results['load_start']}")
    global BUDGET
    BUDGET = Budget(args.budget_min)

    saving = threading.Lock()

    def record(name: str, fn) -> None:
        t = time.monotonic()
        try:
            results[name] = fn()
        except Exception as error:  # noqa: BLE001 - one broken section must not lose the others
            log(f"{name} failed: {error}")
            results[name] = {"error": str(error)[-3000:]}
        with saving:
            results.setdefault("section_s", {})[name] = round(time.monotonic() - t, 1)
            (out / "results.json").write_text(json.dumps(results, indent=1, default=str))

    # Preparation measures nothing, so it runs side by side (see the module's docstring); the
    # longest chains first.
    log("preparing: state runs, history roots, warm-ups, the throughput batch and the latency server, side by side")
    pair = incremental_scenarios(cfg, workdir) if "1" in sections else None
    history = (History(cfg, workdir, [pair[0]] if pair else [], "6" in sections, "4" in sections)
               if {"4", "6"} & sections else None)  # fmt: skip
    try:
        # With the history process, ``args.parallel`` processes at a time on 2 cores.
        with ThreadPoolExecutor(max(1, args.parallel - (1 if history else 0))) as pool:
            if history:
                history.start(pool)
            if not (history and history.elsewhere) and missing_class_archive():
                from lakehouse_assets.lib.class_archive import build

                pool.submit(build)
            dev = pool.submit(latency_server, workdir) if "5" in sections else None
            # Section 1's framework root is ingested by the history process (or, without it, a CLI run).
            warm_ups = ([] if history else [pool.submit(pair[0].dagster_cli)]) + [pool.submit(pair[1].plain)] if pair else []
            batch = pool.submit(throughput_files, cfg, workdir) if "3" in sections else None
            prepare_t = time.monotonic()
            named = [("section 5's server", dev), ("section 3's batch", batch)] + [("section 1's warm-up", w) for w in warm_ups]  # fmt: skip
            named = [(n, f) for n, f in named if f]
            for name, f in named:
                f.add_done_callback(lambda _, name=name: log(f"prepared: {name}"))
            for _, f in named:
                try:
                    f.result()
                except Exception as error:  # noqa: BLE001 - reported by the section that needs it
                    log(f"preparation failed: {error}")
            prepared: BaseException | None = None
            if history:
                try:
                    history.wait_prepared()
                    log("prepared: the history process (section 4's data roots, section 1's framework root, section 6's runs)")
                except Exception as error:  # noqa: BLE001 - reported by the sections that need it
                    log(f"preparation failed: {error}")
                    prepared = error
            results.setdefault("section_s", {})["preparation"] = round(time.monotonic() - prepare_t, 1)
            results["preparation_cpu_s"] = {
                "history process": history.gate.cpu_when_ready if history else None,
                "latency server": tree_cpu(dev.result()[0]) if dev and not dev.exception() else None,
            }  # fmt: skip
            log(f"preparation: {results['section_s']['preparation']:.0f}s; CPU-s of the waiting processes: "
                f"{results['preparation_cpu_s']}")
        if args.prepare_only:
            if dev and not dev.exception():
                dev.result()[0].stop()
            return 0
        if history and history.state_dir:
            record("state", history.state_result)
        # Measured sections, one at a time on a quiet machine; latency first, while its server is up.
        if dev:
            if dev.exception():
                results["latency"] = {"error": str(dev.exception())[-3000:]}
            else:
                record("latency", lambda: bench_latency(cfg, *dev.result()))
        failed = next((w.exception() for w in warm_ups if w.exception()), None)
        if history and pair and not history.warmed():
            failed = failed or RuntimeError("the history process did not ingest section 1's framework root")
        if pair and not failed:
            record("incremental", lambda: bench_incremental(cfg, *pair))
        elif pair:
            results["incremental"] = {"error": f"warm-up failed: {failed}"}
        if history and history.levels:

            def scaling() -> dict:
                if prepared is not None:
                    raise prepared
                return history.measure()

            record("scaling", scaling)
        if batch:
            record("throughput", lambda: bench_throughput(cfg, workdir, batch.result()))
    finally:
        if history:
            history.close()
    results["load_end"] = load()
    results["total_min"] = round((time.monotonic() - started) / 60, 1)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    from bench.report import quote_in_readme, write_report

    if "scaling" in results and "error" not in results["scaling"]:
        chart(results["scaling"], out / "history_scaling.png")
    write_report(results, out / "results.md")
    if out.resolve() == BENCH and quote_in_readme(results, REPO / "README.md"):
        log("README.md: performance table updated")
    log(f"done in {results['total_min']} min: {out / 'results.md'}")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
