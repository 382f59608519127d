"""A data root with its own Dagster instance, and the runs the sections start on it: the Dagster
CLI, ``bench/dagster_run.py`` and the plain script (``bench/plain_pipeline.py``)."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path

from bench.common import BENCH, BIN, EVENTS_CHAIN, REPO, T0, Proc, run


class Scenario:
    """A data root and a Dagster instance (the repository's dagster.yaml, so storage is here)."""

    def __init__(self, workdir: Path, name: str, fresh: bool = True):
        self.dir = workdir / name
        if fresh:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.root = self.dir / "data"
        self.home = self.dir / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / "dagster.yaml", self.home / "dagster.yaml")  # it names no path: all under home
        landing = self.root / "landing" / "events"
        self.landed = len(list(landing.iterdir())) if landing.exists() else 0
        from lakehouse_assets.lib.paths import LakehousePaths

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

    def dagster_cli(
        self, select: str = EVENTS_CHAIN, traced: bool = False, extra_env: dict[str, str] | None = None
    ) -> tuple[Proc, dict | None]:
        """``dagster asset materialize`` in a fresh process; ``traced``: with the framework's timings
        recorded from inside it (``bench/trace/sitecustomize.py``), returned like ``dagster_run.py``'s;
        ``extra_env``: more variables (``SPARK_REMOTE``: a client of a Spark Connect engine)."""
        env = {**self.env, **(extra_env or {})}
        trace = self.dir / "trace.json"
        if traced:
            trace.unlink(missing_ok=True)
            env |= {"LAKEHOUSE_BENCH_TRACE": str(trace), "PYTHONPATH": f"{REPO}:{BENCH / 'trace'}"}
        p = run(
            [str(BIN / "dagster"), "asset", "materialize", "-m", "lakehouse_assets.definitions", "--select", select],
            env,
        )
        return p, json.loads(trace.read_text()) if traced else None

    def dagster_instrumented(self, select: str = EVENTS_CHAIN, *extra: str) -> tuple[Proc, dict]:
        p = run([str(BIN / "python"), str(BENCH / "dagster_run.py"), "--select", select, *extra], self.env)
        return p, p.json()

    def plain(self, *extra: str, extra_env: dict[str, str] | None = None) -> tuple[Proc, dict]:
        """The plain script in a fresh process (``extra_env``: e.g. ``SPARK_REMOTE``)."""
        p = run([str(BIN / "python"), str(BENCH / "plain_pipeline.py"), "--root", str(self.root), *extra], extra_env)
        return p, p.json()
