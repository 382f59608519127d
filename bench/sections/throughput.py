"""Section 3: bronze throughput, the framework's query against a plain Spark batch and DuckDB."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bench.common import BIN, BUDGET, Config, log, median, run
from bench.scenario import Scenario

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
    with open(first) as handle:
        lines = list(handle)
    lines_per_file, all_lines = sum(1 for line in lines if line.strip()), len(lines)
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
    return {
        "files": files,
        "lines": lines_per_file * len(files),
        "all_lines": all_lines * len(files),
        "size": sum(f.stat().st_size for f in files),
    }


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
        rows = r["metadata"]["bronze_events"]["rows_read"]  # every line read, blank ones too
        assert rows == batch["all_lines"], (rows, batch["all_lines"])
        fw.append(r["tables"]["bronze_events"]["runner_s"])
        fw_step.append(r["steps_s"]["bronze_events"])
        _, jp = sc.plain("--batch-bronze", str(sc.dir / "plain-batch"))
        plain.append(jp["batch_bronze"]["duration_s"])
        p = run([str(BIN / "python"), "-c", DUCKDB_SCRIPT, str(landing), str(sc.dir / "duck.parquet")])
        jd = p.json()
        duck.append(jd["duration_s"])
        log(
            f"   rep {i}: framework query {fw[-1]:.1f}s (step {fw_step[-1]:.1f}s), plain batch {plain[-1]:.1f}s, duckdb {duck[-1]:.1f}s"
        )
    return {
        "files": cfg.big_files, "rows": lines, "bytes": size, "framework_query_s": fw, "framework_step_s": fw_step,
        "plain_batch_s": plain, "duckdb_s": duck, "duckdb_rows": jd["rows"],
        "framework_rows_per_s": lines / median(fw), "framework_step_rows_per_s": lines / median(fw_step),
        "plain_rows_per_s": lines / median(plain), "duckdb_rows_per_s": lines / median(duck),
    }  # fmt: skip
