"""What every part of the benchmark suite shares: the repository's paths, the tables' names, the
configuration, the time budget, logging and medians, running a command in a fresh process with
its memory and CPU sampled, the machine's description, and writing the results (``results.json``,
``history_scaling.png``). Imports nothing else of ``bench``."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
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
    bursts: int = 8
    state_runs: int = 3


FULL = Config("full")
QUICK = Config(
    "quick", reps=2, overhead_reps=1, base_files=3, small_rows=100, big_files=4, big_rows=5_000, throughput_reps=1,
    levels=[10, 100], history_rows=10, scaling_reps=1, drops=2, bursts=2, state_runs=3,
)  # fmt: skip


class Budget:
    """The suite's time budget: a section adds repetitions beyond its minimum only while the
    budget lasts (every figure is always a median of at least its minimum)."""

    def __init__(self, minutes: float):
        self.start(minutes)

    def start(self, minutes: float) -> None:
        """Restart the budget: ``minutes`` from now. (The sections hold ``BUDGET`` itself, so
        ``bench.run`` restarts it rather than rebinding the name.)"""
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


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


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
    # Its JVM outlives it by as long as it writes the class archive (PySpark's driver ends when its
    # Python closes stdin). The pipe may close before: a JVM started inside a Dagster step holds
    # the step's captured output, not this pipe. So wait for the process group itself.
    from lakehouse_assets.lib.accel.class_archive import DUMP_ENV

    reader.join(timeout=10)
    if full_env.get(DUMP_ENV):
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and _group_alive(proc.pid):
            time.sleep(0.5)
    # Nothing it started may outlive it (a JVM left behind would skew the next figure).
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, 9)
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


# -- results ----------------------------------------------------------------------------------


def write_results(results: dict, out: Path) -> None:
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))


def line_chart(
    path: Path,
    x: list,
    lines: list[tuple[list, str, str]],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    log_x: bool = False,
    guide: tuple[float, str] | None = None,
) -> None:
    """A PNG of ``lines`` (values, marker style, label) against ``x``; ``guide``: a dotted level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for values, style, label in lines:
        ax.plot(x, values, style, label=label)
    if guide:
        ax.axhline(guide[0], color="grey", linestyle=":", label=guide[1])
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def chart(scaling: dict, path: Path) -> None:
    levels = scaling["levels"]
    total = [lv["median_s"] for lv in levels]
    bronze = [lv["split"]["tables"]["bronze_events"]["step_total"] for lv in levels]
    x = [lv["files_before"] for lv in levels]
    line_chart(
        path, x, [(total, "o-", "run with one new file (fresh process, events chain)"), (bronze, "s--", "bronze_events step")],
        xlabel="landing files already ingested", ylabel="seconds (median)", title="History scaling", log_x=True,
        guide=(total[0] * 1.5, f"target: 1.5x the {x[0]}-file case"),
    )  # fmt: skip


def write_block(block: str, start: str, end: str, target: Path = BENCH / "results.md") -> None:
    """Put ``block`` (which begins with ``start`` and ends with ``end``) into ``target`` in place
    of the block between those markers, or at its end the first time."""
    text = target.read_text() if target.exists() else "# Benchmark results\n"
    if start in text:
        head, rest = text.split(start, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    target.write_text(text)
