"""Writing ``bench/results.md`` from the figures ``bench/run.py`` collected."""

from __future__ import annotations

from pathlib import Path

from bench.report_summary import (
    _median,
    _mib,
    _rate,
    _s,
    explanations,
    latency_parts,
    summary_table,
)

COMPONENTS = [
    ("spark_start", "Spark start (JVM + session)"),
    ("query_planning", "query planning"),
    ("source_offsets_listing", "source offsets / file listing"),
    ("write_and_delta_commit", "write + Delta commit (addBatch)"),
    ("checkpoint_wal_and_commit", "checkpoint (walCommit + commitOffsets)"),
    ("query_other", "other trigger time"),
    ("query_start_stop_setup", "query start/stop, table setup"),
    ("metadata", "materialization metadata"),
    ("checks", "asset checks"),
    ("dagster_step_bookkeeping", "Dagster step bookkeeping"),
]
PLAIN_COMPONENTS = {"query_planning", "source_offsets_listing", "write_and_delta_commit", "checkpoint_wal_and_commit",
                    "query_start_stop_setup"}  # fmt: skip


def overhead_table(ov: dict) -> str:
    out = []
    for case, label in (("no_new_data", "No new data"), ("one_small_file", "One small file")):
        if case not in ov:
            continue
        o = ov[case]
        d, p = o["dagster"], o["plain"]
        tables = list(d["tables"])
        out.append(f"**{label}** — whole process: framework {_s(o['dagster_wall_s'])}, plain {_s(o['plain_wall_s'])}. "
                   "Seconds, median; framework | plain.\n")  # fmt: skip
        out.append("| component | " + " | ".join(tables) + " |")
        out.append("|---|" + "---|" * len(tables))
        for key, name in COMPONENTS:
            cells = []
            for t in tables:
                fv = d["tables"][t].get(key, 0.0)
                pv = p["tables"][t].get(key) if key in PLAIN_COMPONENTS else None
                cells.append(f"{fv:.2f} | {pv:.2f}" if pv is not None else f"{fv:.2f} | –")
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        steps = " | ".join(f"{d['tables'][t]['step_total']:.2f} | {p['tables'][t]['table_total']:.2f}" for t in tables)
        out.append(f"| **step total** (plain: query total) | {steps} |")
        batches = " | ".join(f"{d['tables'][t]['micro_batches']:.0f}" for t in tables)
        out.append(f"| micro-batches with rows | {batches} |")
        pr = d["process"]
        out.append(
            f"\nOutside the steps: Python, Dagster and code location load before the run starts {_s(pr['python_and_dagster_import'], 2)} "
            f"(plain: PySpark import {_s(p['process']['import'], 2)}), Dagster run bookkeeping outside steps "
            f"{_s(pr['run_bookkeeping_outside_steps'], 2)}, after the run until the process exits "
            f"{_s(pr['materialize_call_outside_run'], 2)}; plain Spark start {_s(p['process']['spark_start'], 2)}.\n"
        )
    return "\n".join(out)


README_START = "<!-- bench-summary:start (written by make bench) -->"
README_END = "<!-- bench-summary:end -->"


def quote_in_docs(r: dict, readme: Path) -> bool:
    """Put the summary table, with where and how long it ran, between the markers of
    docs/performance.md."""
    text = readme.read_text()
    if README_START not in text or README_END not in text:
        return False
    m = r["machine"]
    # (a section whose figures come from the preparation, such as 6, takes no time of its own)
    sections = ", ".join(f"{k} {v / 60:.1f}" for k, v in r.get("section_s", {}).items() if v >= 3)
    block = "\n".join([
        README_START,
        f"From one `make bench` on {r['started']} ({m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; "
        f"PySpark {m['pyspark']}, delta-spark {m['delta-spark']}, Dagster {m['dagster']}; load {r['load_start']} at "
        f"the start): **{r.get('total_min', '?')} min** in all (minutes: {sections}). Medians; the counts are in "
        "[`bench/results.md`](../bench/results.md), with the per-table split and why each missed target is missed.",
        "",
        summary_table(r),
        README_END,
    ])  # fmt: skip
    start, end = text.index(README_START), text.index(README_END) + len(README_END)
    readme.write_text(text[:start] + block + text[end:])
    return True


def write_report(r: dict, path: Path, notes: str = "") -> None:
    m = r["machine"]
    cfg = r["config"]
    lines = [
        "# Benchmark results",
        "",
        f"Written by `make bench` (`bench/run.py`, configuration **{cfg['name']}**) on {r['started']}, "
        f"{r.get('total_min', '?')} min in all. Every figure is the median over several runs (counts below), "
        "each run a fresh process unless said otherwise.",
        "",
        "| machine | |",
        "|---|---|",
        f"| CPU | {m['cpu']}, {m['cores']} cores |",
        f"| memory | {m['memory_gib']} GiB |",
        f"| OS | {m['os']} |",
        f"| versions | Python {m['python']}, {m['java']}, PySpark {m['pyspark']}, delta-spark {m['delta-spark']}, "
        f"Dagster {m['dagster']}, DuckDB {m['duckdb']} |",
        f"| load average (1/5/15 min) | {r['load_start']} at start, {r.get('load_end', '?')} at the end |",
        "",
    ]
    if notes:
        lines += [notes, ""]
    lines += [
        "## Summary",
        "",
        summary_table(r),
        "",
    ]
    missed = explanations(r)
    if missed:
        lines += ["### Missed targets", "", *[m + "\n" for m in missed]]
    inc = r.get("incremental", {})
    if "ratio" in inc:
        lines += [
            "## 1. Incremental run cost",
            "",
            f"{cfg['base_files']} history files of {cfg['small_rows']} events were ingested first (not timed: by the "
            "plain script itself, and into the framework's root by section 4's warm process, with checks); then "
            f"{cfg['reps']} times one new file of {cfg['small_rows']} events was landed into both data roots and each "
            "side run in a fresh process, alternating which went first: `dagster asset materialize -m lakehouse_assets.definitions "
            "--select bronze_events,…,gold_hourly_revenue` (the three tables and their quarantines, with their asset "
            "checks) and `python bench/plain_pipeline.py` (the same three availableNow queries, no checks, no metadata). "
            "Both sides start Spark with the same settings (`lakehouse_assets/lib/spark/conf.py`), so both drivers "
            "map Spark's and Delta's classes from the class-data archive that `make setup` builds "
            "(`make bench` builds it during its preparation).",
            "",
            f"- Dagster CLI: {', '.join(_s(v) for v in inc['dagster_s'])} → median {_s(inc['dagster_median_s'])}",
            f"- plain script: {', '.join(_s(v) for v in inc['plain_s'])} → median {_s(inc['plain_median_s'])}",
            "",
        ]
        if inc.get("verify"):
            same = all(v["identical"] for v in inc["verify"].values())
            detail = ", ".join(f"{k} {v['rows']:,} rows" for k, v in inc["verify"].items())
            lines += [
                f"Same semantics, checked: after all runs the plain script's tables {'are' if same else '**are not**'} "
                f"identical to the framework's ({detail}; bronze compared without the landing path and ingestion time).",
                "",
            ]
    ov = inc.get("overhead")
    if ov:
        lines += [
            "## 2. Per-table overhead",
            "",
            "The framework's side is the real `dagster asset materialize` in a fresh process — for one small file, the "
            "very runs of section 1 — with the spans the framework reports to a listener (`lakehouse_assets/lib/timings.py`), "
            "installed from outside by `bench/trace/sitecustomize.py` and `bench/instrument.py`; query phases are the sums of "
            "`StreamingQueryProgress.durationMs` over the run's micro-batches, step times come from Dagster's event log. "
            "“Dagster step bookkeeping” is the step time not spent in Spark start, the table's queries, metadata or checks "
            "(event writes, resource set-up, pool claims). The plain script's figures are from its own queries.",
            "",
            overhead_table(ov),
            "",
        ]
    tp = r.get("throughput", {})
    if "plain_rows_per_s" in tp:
        lines += [
            "## 3. Throughput",
            "",
            f"{tp['rows']:,} non-blank lines in {tp['files']} files ({tp['bytes'] / 2**20:,.0f} MiB; 2% malformed lines): "
            "one generated file and copies of it under other names, two in ten gzipped (parsing costs the same per "
            "byte whether the events are new or copies; generating them all would cost the preparation minutes), "
            "ingested into an empty bronze:",
            "",
            "| system | seconds (runs) | rows/s |",
            "|---|---|---|",
            f"| framework `bronze_events` query (availableNow, parse + quarantine split + 2 idempotent Delta appends) | "
            f"{', '.join(f'{v:.1f}' for v in tp['framework_query_s'])} | {_rate(tp['framework_rows_per_s'])} |",
            f"| same, whole Dagster step (adds the materialization metadata; run without its checks) | "
            f"{', '.join(f'{v:.1f}' for v in tp['framework_step_s'])} | {_rate(tp['framework_step_rows_per_s'])} |",
            f"| plain Spark batch: `spark.read.text` + the same parsing + the same two Delta writes | "
            f"{', '.join(f'{v:.1f}' for v in tp['plain_batch_s'])} | {_rate(tp['plain_rows_per_s'])} |",
            f"| DuckDB `read_json` → Parquet (2 threads, `ignore_errors`; {tp['duckdb_rows']:,} rows out) | "
            f"{', '.join(f'{v:.1f}' for v in tp['duckdb_s'])} | {_rate(tp['duckdb_rows_per_s'])} |",
            "",
        ]
    sc = r.get("scaling", {})
    if sc.get("levels"):
        lines += [
            "## 4. History scaling",
            "",
            "One process (`bench/dagster_run.py --levels`, one warm JVM) prepares one data root per size while "
            f"the suite prepares its other sections: landing files of {cfg['history_rows']} events (twelve per hour "
            "of event time: 10,000 files ≈ 35 days) are landed up to the size and ingested by one unmeasured run "
            'of the events chain without checks (the "ingest run" column), and the smallest root also gets one '
            "unmeasured run with checks (it warms the JVM and the checks; the same process then ingests section 1's "
            "history into the framework's root and runs section 6's runs; the largest root is landed and ingested by "
            "a process of its own). After sections 5 and 1 the same process "
            f"runs the chain (checks on) with one new file of {cfg['small_rows']} events each time: "
            f"{cfg['scaling_reps']} times at the smallest and largest size (the target's ratio), "
            f"{max(1, cfg['scaling_reps'] - 2)} time(s) between, "
            "taking the sizes in turn (every timed run follows a run on another root: no size gets the warmer "
            "caches of a repeat, and drift spreads evenly). "
            "The timed runs share a warm JVM on purpose: the JVM start every fresh process pays (section 1) is the "
            "same at every size and would only dilute what grows with the history.",
            "",
            "![history scaling](history_scaling.png)",
            "",
            "| files already ingested | run with one new file (runs) | vs first | bronze step | bronze source offsets/listing | "
            "silver step | gold step | seen-files log | ingest run |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for lv in sc["levels"]:
            t = lv["split"]["tables"]
            runs = ", ".join(f"{w:.1f}" for w in lv["wall_s"])
            ingest = _s(lv["ingest_run_s"], 0)
            lines.append(
                f"| {lv['files_before']:,} | {_s(lv['median_s'])} ({runs}) | {lv['vs_first']:.2f}× | "
                f"{_s(t['bronze_events']['step_total'])} | {_s(t['bronze_events']['source_offsets_listing'], 2)} | "
                f"{_s(t['silver_events']['step_total'])} | {_s(t['gold_hourly_revenue']['step_total'])} | "
                f"{lv['seen_files_log_bytes'] / 1024:,.0f} KiB | {ingest} |"
            )
        lines.append("")
    lat = r.get("latency", {})
    if lat:
        lines += ["## 5. Landing-to-gold latency", ""]
        if lat.get("p50_s") is not None:
            lines += [
                f"`bench/measure_latency.py --isolated --drops {len(lat['drops_s'])}` (a temporary `dagster dev` with "
                "the repository's settings; the landing sensor launches every run): per drop "
                f"{', '.join(f'{v:.1f}' for v in lat['drops_s'])} s → p50 {_s(lat['p50_s'])}, p95 {_s(lat['p95_s'])}.",
                "",
            ]
            lines += latency_parts(lat)
            kafka = lat.get("kafka")
            if kafka:
                lines += [
                    "The same server with a Kafka broker, one purchase event produced to topic `events` per drop (the "
                    "Kafka sensor launches `ingest_kafka_events`; latency from the broker's acknowledgement): per drop "
                    f"{', '.join(f'{v:.1f}' for v in kafka['drops_s'])} s → p50 {_s(kafka['p50_s'])}, p95 {_s(kafka['p95_s'])}. "
                    "Files above were measured on this server too (a broker configured: each bronze_events run also "
                    "asks the broker for the topic's offsets).",
                    "",
                ]
                lines += latency_parts(kafka)
            burst = lat.get("burst") or {}
            if burst.get("rounds_s"):
                lines += [
                    "Bursts on the same server (`bench/burst.py`, as `make latency BURST=1`): each round lands one "
                    "file in each of the four sources at once and lasts until every bronze table has committed and no "
                    "run has been queued or going for 10 s; its figure is the last commit of any table minus the "
                    f"landing: {', '.join(f'{v:.1f}' for v in burst['rounds_s'])} s → p50 {_s(burst['p50_s'])}, "
                    f"p95 {_s(burst['p95_s'])}; {burst['runs']} runs, {burst['failed']} failed, {burst['retried']} "
                    "retried (Dagster's run retries).",
                    "",
                ]
        else:
            lines += [f"The latency script did not finish: ```{lat.get('tail', '')}```", ""]
    st = r.get("state", {})
    if st.get("series"):
        lines += [
            "## 6. Memory and state",
            "",
            f"Peak resident memory of the process tree (Python + Spark JVM), sampled every 0.1 s: incremental run "
            f"{_mib(_median(inc.get('dagster_peak_rss', [])))} (plain script {_mib(_median(inc.get('plain_peak_rss', [])))}); "
            f"the preparation process of section 4, which ends with section 6's {len(st['series'])} consecutive runs of "
            f"the stateful tables and their inputs, {_mib(st['peak_rss'])}. "
            "Those runs (checks off, an hour of every source each) are preparation-time work: their figures are "
            "sizes, so they run side by side with the suite's other preparation, in a JVM already warm.",
            "",
            "| run | state store bytes | state rows (metadata) |",
            "|---|---|---|",
        ]
        for s in st["series"]:
            size = ", ".join(f"{k}: {v / 1024:,.0f} KiB" for k, v in s["state_bytes"].items())
            rows = ", ".join(f"{k}: {v}" for k, v in s["state_rows"].items())
            lines.append(f"| {s['run']} | {size} | {rows} |")
        lines.append("")
    errors = {k: v["error"] for k, v in r.items() if isinstance(v, dict) and "error" in v}
    if errors:
        lines += ["## Sections that failed", ""]
        for k, v in errors.items():
            lines += [f"**{k}**:", "", "```", v[-1500:], "```", ""]
    path.write_text("\n".join(lines) + "\n" + _other_benches_blocks(path))


# Blocks other benches write into the same file (``make bench-history``, ``make bench-tick``):
# kept as they are when ``make bench`` writes its own part again.
_OTHER_BLOCKS = (
    ("<!-- landing-history -->", "<!-- /landing-history -->"),
    ("<!-- sensor-tick -->", "<!-- /sensor-tick -->"),
)


def _other_benches_blocks(path: Path) -> str:
    text = path.read_text() if path.exists() else ""
    kept = []
    for start, end in _OTHER_BLOCKS:
        if start in text and end in text:
            kept.append(text[text.index(start) : text.index(end) + len(end)])
    return "".join(f"\n{block}\n" for block in kept)


def merge(parts: list[dict], note: str = "") -> dict:
    """Results of several ``bench.run --only ...`` invocations as one (sections, configs, loads)."""
    merged = dict(parts[0])
    merged["config"] = dict(parts[0]["config"])
    merged["config"]["name"] = " + ".join(f"[{p['config']['name']}: {', '.join(k for k in p.get('section_s', {}))}]"
                                          for p in parts)  # fmt: skip
    merged["load_start"] = " | ".join(p["load_start"] for p in parts)
    merged["load_end"] = " | ".join(p.get("load_end", "?") for p in parts)
    merged["total_min"] = max(p.get("total_min", 0) for p in parts)
    owned = {"incremental": ("reps", "base_files", "small_rows"), "scaling": ("history_rows", "scaling_reps")}
    for p in parts:
        for key in ("incremental", "throughput", "scaling", "latency", "state"):
            if key in p:
                merged[key] = p[key]
                for field in owned.get(key, ()):
                    merged["config"][field] = p["config"][field]
    merged["merge_note"] = note
    return merged


if __name__ == "__main__":
    import argparse
    import json

    from bench.common import chart, write_results

    parser = argparse.ArgumentParser(description="Merge results.json files and write results.md")
    parser.add_argument("parts", nargs="+")
    parser.add_argument("--out", default=str(Path(__file__).parent))
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    out = Path(args.out)
    merged = merge([json.loads(Path(p).read_text()) for p in args.parts], args.note)
    write_results(merged, out)
    if merged.get("scaling", {}).get("levels"):
        chart(merged["scaling"], out / "history_scaling.png")
    write_report(merged, out / "results.md", merged["merge_note"])
