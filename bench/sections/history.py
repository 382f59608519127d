"""Section 4, history scaling (prepared early, measured late), in the process that also runs
section 6's runs and ingests section 1's framework root; and the driver's class archive, which
the run ingesting the largest history trains when it is missing."""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import BENCH, BIN, EVENTS_CHAIN, STATE_CHAIN, STATEFUL, Config, Gate, log, median, run
from bench.scenario import Scenario
from bench.sections.state import state_series
from bench.split import median_tree, split_dagster

# -- the class archive ------------------------------------------------------------------------


def missing_class_archive() -> Path | None:
    """Where the driver's class archive (``lakehouse_assets/lib/accel/class_archive.py``) goes when it
    is missing. `make bench` leaves it to the preparation: the run that ingests section 4's
    largest history trains it (the events chain, as setup's training run), instead of a
    training run of its own before everything else. Only section 1's runs must have it, and
    they start after preparation."""
    from lakehouse_assets.lib.accel import class_archive
    from lakehouse_assets.lib.spark.jars import cached_jars

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
        from lakehouse_assets.lib.accel import class_archive

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
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.gate.pid, 9)
        self._pool.shutdown(wait=True)

    def measure(self) -> dict:
        log(
            f"4. scaling: {', '.join(map(str, self.level_runs))} runs with one new file at "
            f"{', '.join(f'{n:,}' for n in self.levels)} files ingested"
        )
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
            log(
                f"4. scaling: after {measured['files_before']:,} files (history ingested in "
                f"{measured['ingest_run_s']:.0f}s during preparation), one new file: {', '.join(f'{w:.1f}' for w in walls)}s"
            )
        base = levels[0]["median_s"]
        for lv in levels:
            lv["vs_first"] = lv["median_s"] / base
        warm_up = j["prepared"].get("warm_up") or {}
        return {"levels": levels, "warm": True, "warm_up_s": warm_up.get("wall_s"), "peak_rss": proc.peak_rss}
