"""A run launcher whose runs start from a warm process: sensor, schedule and UI runs skip the
new interpreter that imports Dagster and the code location again (about 1.5 s of CPU each).

Dagster's ``DefaultRunLauncher`` asks the code server to start each run, and the code server
starts it with ``multiprocessing``'s ``spawn`` context (hard-coded in ``dagster/_grpc/server.py``),
so every run pays a cold start and no setting changes that. Dagster's other launchers (Docker,
Kubernetes, ECS) start ``dagster api execute_run <arguments>`` instead; this one starts the same
command, forked from a process that imported it already
(:mod:`lakehouse_assets.lib.orchestrate.run_forker`): one per Python executable and code
location, the launcher's child, ending with it. The run's process is Dagster's own run worker,
so a run, its event log, retries and cancellation are what they are with Dagster's launcher.

When the warm process cannot serve (it stepped aside after an edit of the project's code, or it
failed), the run starts as a new process running the same command. ``LAKEHOUSE_WARM_RUNS=0``
starts every run that way. Set it in ``dagster.yaml``::

    run_launcher:
      module: lakehouse_assets.lib.orchestrate.warm_runs
      class: WarmRunLauncher
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, cast

from dagster import _check as check
from dagster._core.code_pointer import ModuleCodePointer, PackageCodePointer
from dagster._core.launcher.base import LaunchRunContext, RunLauncher
from dagster._grpc.types import ExecuteRunArgs
from dagster._serdes import ConfigurableClass, ConfigurableClassData

from lakehouse_assets.lib.orchestrate.run_forker import report_crash
from lakehouse_assets.lib.settings import current

PID_TAG = "lakehouse/run_pid"
# The first run waits for the warm process's imports; a busy machine may take this long.
ANSWER_TIMEOUT_S = 120.0


@dataclass
class _WarmProcess:
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, python: str, module: str, cwd: str) -> _WarmProcess:
        command = [python, "-m", "lakehouse_assets.lib.orchestrate.run_forker", module]
        return cls(subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE))

    def fork(self, args: Sequence[str], cwd: str, env: Mapping[str, str]) -> int | None:
        """The pid of the run process it forked (None: it cannot serve; start another)."""
        stdin, stdout = cast(IO[bytes], self.process.stdin), cast(IO[bytes], self.process.stdout)
        try:
            stdin.write(json.dumps({"args": list(args), "cwd": cwd, "env": dict(env)}).encode() + b"\n")
            stdin.flush()
            ready, _, _ = select.select([stdout], [], [], ANSWER_TIMEOUT_S)
            if not ready:
                self.process.kill()  # so it cannot fork this run after the launcher started it cold
                return None
            answer = json.loads(stdout.readline() or b"{}")
        except (OSError, ValueError):
            return None
        return int(answer.get("pid") or 0) or None

    def close(self) -> None:
        try:
            cast(IO[bytes], self.process.stdin).close()  # its end of input: it exits
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()


def _watch_cold(process: subprocess.Popen[bytes], execute_run_args: str) -> None:
    if process.wait() != 0:
        report_crash(execute_run_args, process.returncode)


class WarmRunLauncher(RunLauncher, ConfigurableClass):
    """Launches each run as Dagster's run worker (``dagster api execute_run``) forked from a warm
    process of the run's code location; the same command as a new process when none can serve."""

    def __init__(self, inst_data: ConfigurableClassData | None = None) -> None:
        self._inst_data = inst_data
        self._warm: dict[tuple[str, str, str], _WarmProcess] = {}
        self._lock = threading.Lock()
        super().__init__()

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]) -> WarmRunLauncher:
        return cls(inst_data=inst_data)

    def launch_run(self, context: LaunchRunContext) -> None:
        run = context.dagster_run
        origin = check.not_none(run.job_code_origin, f"run {run.run_id} has no code origin to start it from")
        arguments = ExecuteRunArgs(job_origin=origin, run_id=run.run_id, instance_ref=self._instance.get_ref())
        # ``dagster api execute_run <arguments>`` as ``python -m dagster`` of the code location's
        # interpreter (Dagster's own launcher, too, starts the run with that interpreter).
        args = list(arguments.get_command_args())[-3:]
        python = origin.executable_path or sys.executable
        pointer = origin.repository_origin.code_pointer
        cwd = getattr(pointer, "working_directory", None) or os.getcwd()
        module = pointer.module if isinstance(pointer, (ModuleCodePointer, PackageCodePointer)) else ""
        pid = self._forked(python, module, args, cwd) if current().warm_runs else None
        how = "forked from the code location's warm process"
        if pid is None:
            process = subprocess.Popen([python, "-m", "dagster", *args], cwd=cwd, stdin=subprocess.DEVNULL)
            threading.Thread(target=_watch_cold, args=(process, args[-1]), daemon=True).start()
            pid, how = process.pid, "started as a new process"
        self._instance.add_run_tags(run.run_id, {PID_TAG: str(pid)})
        self._instance.report_engine_event(f"Run process {pid} {how}.", run, cls=self.__class__)

    def _forked(self, python: str, module: str, args: list[str], cwd: str) -> int | None:
        key = (python, cwd, module)
        env = dict(os.environ)
        with self._lock:
            for _ in range(2):  # a warm process that stepped aside is replaced once
                warm = self._warm.get(key) or self._warm.setdefault(key, _WarmProcess.start(python, module, cwd))
                pid = warm.fork(args, cwd, env)
                if pid is not None:
                    return pid
                self._warm.pop(key).close()
        return None

    def terminate(self, run_id: str) -> bool:
        """Ask the run's process to stop as Dagster's own launcher does: an interrupt, which
        Dagster's run worker turns into a cancelled run."""
        run = self._instance.get_run_by_id(run_id)
        if run is None or run.is_finished or PID_TAG not in run.tags:
            return False
        self._instance.report_run_canceling(run)
        try:
            os.kill(int(run.tags[PID_TAG]), signal.SIGINT)
        except (ProcessLookupError, ValueError):
            return False
        return True

    def dispose(self) -> None:
        with self._lock:
            for warm in self._warm.values():
                warm.close()
            self._warm.clear()


__all__ = ["PID_TAG", "WarmRunLauncher"]
