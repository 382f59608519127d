"""The example SDP project side by side: ``spark-pipelines run`` and ``dagster asset materialize``.

    python -m bench.sdp [--reps 5]     (make bench-sdp)

Like for like: both sides are clients of one Spark Connect engine with Delta (started here,
warm before anything is timed), read the same landing folder and build the same five datasets,
the ones SDP can run here (``verification/side_by_side.py`` says why the Auto CDC
tables are left out): three bronze streaming tables, ``silver_orders`` (two append flows) and
the materialized view ``customer_revenue``. After a warm-up run of each, every repetition lands
one new file per source and runs each side in a fresh process, alternating which goes first;
then each side runs with nothing new. Last, the history curve: files are landed up to each level
of ``--history`` rounds (10, 25, 50), both sides catch up (not timed), then each is timed on one
more round (``--history-reps`` times). Its materialized view recomputes from everything each run,
ours reads only what is new, so the gap should widen with history. Writes
``bench/sdp_results.md``, ``.json`` and ``bench/sdp_history.png``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

import dagster as dg

from bench.common import BENCH, BIN, REPO, line_chart, load, log, machine, median, run
from devstack.connect_server import ConnectServer
from devstack.ports import free_port
from lakehouse_assets.lib.spark.engine_auth import client_environment
from verification import orders_answers as answers
from verification import side_by_side

DEFINITIONS = REPO / "examples" / "sdp_orders" / "definitions.py"


def _versions(table: Path) -> int:
    return len(list((table / "_delta_log").glob("*.json")))


class Sides:
    def __init__(self, work: Path, engine_url: str, orders_per_file: int = 8) -> None:
        self.work, self.url, self.orders_per_file = work, engine_url, orders_per_file
        self.root, self.home = work / "lakehouse", work / "dagster_home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.landing = self.root / "landing" / "sdp_orders"
        self.project = side_by_side.sdp_project(work, self.landing)
        self.rounds = 0

    def land(self) -> None:
        self.rounds += 1
        answers.land_round(self.landing, self.rounds, self.orders_per_file)

    def ours(self):
        env = {"LAKEHOUSE_ROOT": str(self.root), "DAGSTER_HOME": str(self.home), "SPARK_REMOTE": self.url}
        select = ",".join(side_by_side.SDP_DATASETS)
        return run([str(BIN / "dagster"), "asset", "materialize", "-f", str(DEFINITIONS), "--select", select], env)

    def theirs(self):
        remote, token = client_environment(self.url)  # the token in a variable, not on the command line
        command = [str(side_by_side.SPARK_PIPELINES), "run", "--spec", str(self.project / "spark-pipeline.yml"),
                   "--remote", remote]  # fmt: skip
        return run(command, {"PYSPARK_PYTHON": str(BIN / "python"), **token})

    def revenue_versions(self) -> tuple[int, int]:
        """Delta versions of ``customer_revenue``: (ours, SDP's)."""
        return (_versions(self.root / "tables" / "customer_revenue"),
                _versions(side_by_side.sdp_table_path(self.work, "customer_revenue")))  # fmt: skip

    def our_report(self) -> dict:
        """What our last run left in Dagster per dataset: rows read, rows written, refresh."""
        instance = dg.DagsterInstance.from_config(str(self.home))
        report = {}
        for name in side_by_side.SDP_DATASETS:
            event = instance.get_latest_materialization_event(dg.AssetKey(name))
            meta = event.asset_materialization.metadata if event and event.asset_materialization else {}
            report[name] = {
                k: getattr(v, "value", v) for k, v in meta.items() if k in ("rows_read", "rows_written", "refresh")
            }
        return report


def _timed_round(sides: Sides, first: str) -> dict[str, float]:
    """Land one round, run both sides (``first`` first); each side's wall time."""
    sides.land()
    walls = {}
    for side in (first, "theirs" if first == "ours" else "ours"):
        proc = sides.ours() if side == "ours" else sides.theirs()
        assert proc.rc == 0, proc.out[-3000:]
        walls[side] = proc.wall_s
    return walls


def history_curve(sides: Sides, levels: list[int], reps: int) -> list[dict]:
    """Time per incremental run of each side after each level of rounds of history."""
    points = []
    for level in levels:
        while sides.rounds < level:
            sides.land()
        for proc in (sides.ours(), sides.theirs()):  # both caught up on the history (not timed)
            assert proc.rc == 0, proc.out[-3000:]
        runs = [_timed_round(sides, "ours" if i % 2 == 0 else "theirs") for i in range(reps)]
        point = {"history_rounds": level, **{side: median([r[side] for r in runs]) for side in ("ours", "theirs")},
                 "runs": runs}  # fmt: skip
        log(f"history {level} rounds: lakehouse_assets {point['ours']:.1f}s, spark-pipelines {point['theirs']:.1f}s")
        points.append(point)
    return points


def chart(points: list[dict], path: Path) -> None:
    line_chart(
        path, [p["history_rounds"] for p in points],
        [([p["theirs"] for p in points], "o-", "spark-pipelines run"),
         ([p["ours"] for p in points], "s-", "lakehouse_assets (dagster asset materialize)")],
        xlabel="rounds of history (one file per source each)", ylabel="seconds per run with one new round (median)",
        title="The SDP example: time per run against history",
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--base", type=int, default=3, help="rounds of files landed before the warm-up runs")
    parser.add_argument("--history", default="10,25,50", help="levels of rounds of history for the curve ('' skips it)")
    parser.add_argument("--history-reps", type=int, default=2)
    parser.add_argument(
        "--rows-per-round",
        type=int,
        default=8,
        help="orders in each round's file of each shop (10000: 50 rounds make 1,000,000 orders)",
    )
    parser.add_argument("--workdir", default=str(REPO / ".cache" / "bench-sdp"))
    parser.add_argument("--report", action="store_true", help="only write sdp_results.md again from sdp_results.json")
    args = parser.parse_args(argv)
    if args.report:
        (BENCH / "sdp_results.md").write_text(report(json.loads((BENCH / "sdp_results.json").read_text())))
        return 0
    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    results: dict = {"machine": machine(), "load_start": load(), "reps": args.reps, "base_rounds": args.base,
                     "orders_per_file": args.rows_per_round}  # fmt: skip
    with (
        open(work / "engine.log", "wb") as engine_log,
        ConnectServer(free_port(), log=engine_log, conf=side_by_side.engine_conf(work)) as engine,
    ):
        sides = Sides(work, engine.url, args.rows_per_round)
        side_by_side.create_sdp_database(engine.url)
        for _ in range(args.base):
            sides.land()
        log("warm-up: one run of each side over the first files (not timed)")
        for proc in (sides.ours(), sides.theirs()):
            assert proc.rc == 0, proc.out[-3000:]
        walls: dict[str, list[float]] = {"ours": [], "theirs": []}
        added: dict[str, list[int]] = {"ours": [], "theirs": []}
        for i in range(args.reps):
            sides.land()
            for side in ("ours", "theirs") if i % 2 == 0 else ("theirs", "ours"):
                before = sides.revenue_versions()
                proc = sides.ours() if side == "ours" else sides.theirs()
                assert proc.rc == 0, proc.out[-3000:]
                walls[side].append(proc.wall_s)
                added[side].append(sides.revenue_versions()[side == "theirs"] - before[side == "theirs"])
                if side == "theirs":
                    results["sdp_output_tail"] = [
                        line for line in proc.out.splitlines() if re.search(r"Flow |Run is", line)
                    ]
            log(f"rep {i + 1}: lakehouse_assets {walls['ours'][-1]:.1f}s, spark-pipelines {walls['theirs'][-1]:.1f}s")
        results["our_report"] = sides.our_report()
        idle = {"ours": [], "theirs": []}
        idle_added = {"ours": 0, "theirs": 0}
        for _ in range(3):
            before = sides.revenue_versions()
            for side, proc in (("ours", sides.ours()), ("theirs", sides.theirs())):
                assert proc.rc == 0, proc.out[-3000:]
                idle[side].append(proc.wall_s)
            after = sides.revenue_versions()
            idle_added["ours"] += after[0] - before[0]
            idle_added["theirs"] += after[1] - before[1]
        log(f"no new data: lakehouse_assets {median(idle['ours']):.1f}s, spark-pipelines {median(idle['theirs']):.1f}s")
        levels = [int(n) for n in args.history.split(",") if n.strip()]
        results["history"] = history_curve(sides, levels, args.history_reps)
    results |= {"incremental_s": walls, "revenue_versions_added": added, "no_data_s": idle,
                "no_data_revenue_versions_added": idle_added, "load_end": load()}  # fmt: skip
    (BENCH / "sdp_results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    (BENCH / "sdp_results.md").write_text(report(results))  # again from the JSON: python -m bench.sdp --report
    if results["history"]:
        chart(results["history"], BENCH / "sdp_history.png")
    log(f"written: {BENCH / 'sdp_results.md'}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


def _verdict(ratio: float, target: float) -> str:
    return f"{ratio:.2f}× | ≤ {target:g}× | **{'met' if ratio <= target else 'missed'}**"


def targets(r: dict) -> list[str]:
    """The issue's targets for the SDP example, each against its figure (ours / spark-pipelines)."""
    w, idle, hist = r["incremental_s"], r["no_data_s"], r.get("history") or []
    rows = [
        "| measure (lakehouse_assets / spark-pipelines run, medians) | ratio | target | |",
        "|---|---|---|---|",
        f"| one new file per source | {_verdict(median(w['ours']) / median(w['theirs']), 1.0)} |",
        f"| nothing new | {_verdict(median(idle['ours']) / median(idle['theirs']), 0.5)} |",
    ]
    if hist:
        last = hist[-1]
        rows.append(f"| one new round after {last['history_rounds']} rounds of history | "
                    f"{_verdict(last['ours'] / last['theirs'], 0.3)} |")  # fmt: skip
    return rows


def history_table(per_file: int, hist: list[dict]) -> list[str]:
    if not hist:
        return []
    return [
        "## Time per run against history",
        "",
        "Files landed up to each level (one per source per round), both sides caught up without timing, then each "
        "timed on one more round; medians of the runs listed. Chart: [sdp_history.png](sdp_history.png).",
        "",
        "| rounds of history | spark-pipelines run | lakehouse_assets | ratio | runs (spark-pipelines; lakehouse_assets) |",
        "|---|---|---|---|---|",
        *[
            f"| {p['history_rounds']} | {p['theirs']:.1f} s | {p['ours']:.1f} s | {p['ours'] / p['theirs']:.2f}× | "
            + ", ".join(f"{x['theirs']:.1f}" for x in p["runs"])
            + "; "
            + ", ".join(f"{x['ours']:.1f}" for x in p["runs"])
            + " |"
            for p in hist
        ],
        "",
        f"After {hist[-1]['history_rounds']} rounds `customer_revenue` covers "
        f"{hist[-1]['history_rounds'] * 2 * (per_file + 1):,} orders at most ({per_file + 1:,} per shop per round, "
        "`--rows-per-round`). What the curve says: [docs/spark-declarative-pipelines.md]"
        "(../docs/spark-declarative-pipelines.md#side-by-side-with-spark-pipelines-run).",
        "",
    ]


def report(r: dict) -> str:
    m, w, idle = r["machine"], r["incremental_s"], r["no_data_s"]
    flows = sum(1 for line in r.get("sdp_output_tail", []) if "has COMPLETED" in line)
    lines = [
        "# The SDP example: spark-pipelines run and lakehouse_assets, side by side",
        "",
        f"Written by `python -m bench.sdp` (`bench/sdp.py`, whose docstring gives the method) on {m['cpu']}, "
        f"{m['cores']} cores; PySpark {m['pyspark']}, delta-spark {m['delta-spark']}, Dagster {m['dagster']}. "
        f"Load average {r['load_start']} at start, {r['load_end']} at the end. Both sides are clients of one warm "
        f"Spark Connect engine; {r['base_rounds']} rounds of files were landed and run before timing; medians of "
        f"{r['reps']} runs, each after one new file per source ({r.get('orders_per_file', 8) + 1:,} orders per shop, 7 customer changes).",
        "",
        "| | spark-pipelines run | lakehouse_assets (dagster asset materialize) |",
        "|---|---|---|",
        f"| one new file per source: wall time | {median(w['theirs']):.1f} s | {median(w['ours']):.1f} s |",
        f"| nothing new: wall time | {median(idle['theirs']):.1f} s | {median(idle['ours']):.1f} s |",
        f"| `customer_revenue` Delta versions written per incremental run | {median(r['revenue_versions_added']['theirs']):g} "
        f"| {median(r['revenue_versions_added']['ours']):g} |",
        f"| `customer_revenue` Delta versions written by 3 runs with nothing new | {r['no_data_revenue_versions_added']['theirs']} "
        f"| {r['no_data_revenue_versions_added']['ours']} |",
        "",
        "All runs: spark-pipelines "
        + ", ".join(f"{s:.1f}" for s in w["theirs"])
        + " s; lakehouse_assets "
        + ", ".join(f"{s:.1f}" for s in w["ours"])
        + " s.",
        "",
        *targets(r),
        "",
        *history_table(r.get("orders_per_file", 8), r.get("history") or []),
        "Where the sides differ and why: [docs/spark-declarative-pipelines.md]"
        "(../docs/spark-declarative-pipelines.md#side-by-side-with-spark-pipelines-run).",
        "",
        "## What each reports to the user",
        "",
        f"**spark-pipelines run** prints flow state changes to the terminal ({flows} flows completed in the last "
        "incremental run) and keeps no history, row counts or expectations outside the process. Its last run's lines:",
        "",
        "```",
        *r.get("sdp_output_tail", []),
        "```",
        "",
        "**lakehouse_assets** records one Dagster materialization per dataset with its metadata (and the run, its "
        "logs and asset checks in the instance). The last incremental run's figures, per dataset:",
        "",
        "| dataset | rows read | rows written | refresh |",
        "|---|---|---|---|",
        *[
            f"| {name} | {meta.get('rows_read', '—')} | {meta.get('rows_written', '—')} | {meta.get('refresh', '—')} |"
            for name, meta in r["our_report"].items()
        ],
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
