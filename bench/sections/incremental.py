"""Sections 1 and 2: the incremental run cost (one new small file) and the per-table overhead
(no new data), the framework against the plain PySpark script."""

from __future__ import annotations

from pathlib import Path

from bench.common import BUDGET, Config, log, median
from bench.scenario import Scenario
from bench.split import median_tree, split_dagster, split_plain


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
