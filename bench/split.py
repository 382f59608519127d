"""An instrumented run's time split into components, per table and for the whole process
(sections 2 and 4), and the median of such splits."""

from __future__ import annotations

from bench.common import CHAIN_TABLES, median

PHASES = ["queryPlanning", "getBatch", "latestOffset", "addBatch", "walCommit", "commitOffsets", "triggerExecution"]


def phase_sums(progress: list[dict]) -> dict[str, float]:
    sums = dict.fromkeys(PHASES, 0.0)
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
