"""A run launcher whose runs start from a warm process: sensor, schedule and UI runs skip the
new interpreter that imports Dagster and the code location again (about 1.5 s of CPU each).

Dagster's ``DefaultRunLauncher`` asks the code server to start each run, and the code server
starts it with ``multiprocessing``'s ``spawn`` context (hard-coded in ``dagster/_grpc/server.py``),
so every run pays a cold start and no setting changes that. Dagster's other launchers (Docker,
Kubernetes, ECS) start ``dagster api execute_run <arguments>`` instead; this one starts the same
command, forked from a process that imported it already
(:mod:`lakehouse_assets.lib.accel.run_forker`): one per Python executable and code
location, the launcher's child, ending with it. The run's process is Dagster's own run worker,
so a run, its event log, retries and cancellation are what they are with Dagster's launcher.

When the warm process cannot serve (it stepped aside after an edit of the project's code, or it
failed), the run starts as a new process running the same command. ``LAKEHOUSE_WARM_RUNS=0``
starts every run that way. A run cancelled before its process listens for the interrupt ends
cancelled through Dagster's run monitoring (on in the repository's ``dagster.yaml``). Set the
launcher in ``dagster.yaml``::

    run_launcher:
      module: lakehouse_assets.lib.accel.warm_runs
      class: WarmRunLauncher
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, cast

from lakehouse_assets.lib.accel.run_forker import report_crash
from lakehouse_assets.lib.orchestrate.dagster_internals import (
    ConfigurableClass,
    ConfigurableClassData,
    ExecuteRunArgs,
    LaunchRunContext,
    ModuleCodePointer,
    PackageCodePointer,
    RunLauncher,
)
from lakehouse_assets.lib.settings import current

# Dagster's UI hides tags under ".dagster/" (its HIDDEN_TAG_PREFIX): the run's process is the
# launcher's business, not a tag to pin in the Runs list.
PID_TAG = ".dagster/lakehouse_run_process"
# The warm process's imports, once; a busy machine may take this long.
READY_TIMEOUT_S = 120.0
# A fork once it is ready: milliseconds. No answer in this time is a broken warm process.
ANSWER_TIMEOUT_S = 30.0
# After a warm process failed to get ready, runs of its code location start cold this long.
COLD_AFTER_FAILURE_S = 300.0
log = logging.getLogger(__name__)


class _WarmProcess:
    """The launcher's end of a :mod:`~lakehouse_assets.lib.accel.run_forker` process:
    requests on its stdin, answers on a pipe of their own (its stdout is the runs')."""

    def __init__(self, python: str, module: str, cwd: str) -> None:
        self._answers, answers_w = os.pipe()
        command = [python, "-m", "lakehouse_assets.lib.accel.run_forker", module, str(answers_w)]
        try:
            self.process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, pass_fds=(answers_w,))
        finally:
            os.close(answers_w)
        self._pending = b""

    def _read_answer(self, timeout_s: float) -> dict[str, Any] | None:
        poller = select.poll()
        poller.register(self._answers, select.POLLIN)
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._pending:
            if not poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
                return None
            chunk = os.read(self._answers, 4096)
            if not chunk:
                return None
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)

    def ready(self) -> bool:
        """Whether it finished its imports in time (if not it is killed: it read no request)."""
        if (self._read_answer(READY_TIMEOUT_S) or {}).get("ready"):
            return True
        self.close()
        return False

    def fork(self, args: Sequence[str], cwd: str, env: Mapping[str, str]) -> int | None:
        """The pid of the run process it forked; None when it stepped aside without forking.

        :raises RuntimeError: it took the request but gave no pid; the run may have started,
            so it is not started again elsewhere.
        """
        request = json.dumps({"args": list(args), "cwd": cwd, "env": dict(env)}).encode() + b"\n"
        try:
            cast(IO[bytes], self.process.stdin).write(request)
            cast(IO[bytes], self.process.stdin).flush()
        except (OSError, ValueError):
            return None  # it had ended, or was closed: it read nothing
        answer = self._read_answer(ANSWER_TIMEOUT_S)
        if answer is not None and answer.get("stale"):
            return None
        if answer is None or not answer.get("pid"):
            self.close()
            raise RuntimeError("the warm run process took the run but gave no process id; see its output")
        return int(answer["pid"])

    def close(self) -> None:
        try:
            cast(IO[bytes], self.process.stdin).close()  # its end of input: it exits
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
        if self._answers >= 0:
            with contextlib.suppress(OSError):
                os.close(self._answers)
            self._answers = -1


def _watch_cold(process: subprocess.Popen[bytes], execute_run_args: str) -> None:
    report_crash(execute_run_args, process.wait())


def _process_tag(pid: int) -> str:
    """``host:pid:start``: which process, so that a later signal never reaches another one."""
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def _start_time(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


class WarmRunLauncher(RunLauncher, ConfigurableClass):
    """Launches each run as Dagster's run worker (``dagster api execute_run``) forked from a warm
    process of the run's code location; the same command as a new process when none can serve."""

    def __init__(self, inst_data: ConfigurableClassData | None = None) -> None:
        self._inst_data = inst_data
        self._warm: dict[tuple[str, str, str], _WarmProcess] = {}
        # A code location whose warm process did not get ready starts its runs cold until then.
        self._cold_until: dict[tuple[str, str, str], float] = {}
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
        origin = run.job_code_origin
        if origin is None:
            raise RuntimeError(f"run {run.run_id} has no code origin to start it from")
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
        try:  # the run is going: bookkeeping that fails must not fail it
            self._instance.add_run_tags(run.run_id, {PID_TAG: _process_tag(pid)})
            self._instance.report_engine_event(f"Run process {pid} {how}.", run, cls=self.__class__)
        except Exception:
            log.warning("could not record process %s of run %s", pid, run.run_id, exc_info=True)

    def _forked(self, python: str, module: str, args: list[str], cwd: str) -> int | None:
        key = (python, cwd, module)
        env = dict(os.environ)
        with self._lock:
            for _ in range(2):  # a warm process that stepped aside is replaced once
                warm = self._warm.get(key)
                if warm is None:
                    if time.monotonic() < self._cold_until.get(key, 0.0):
                        return None
                    warm = _WarmProcess(python, module, cwd)
                    if not warm.ready():
                        self._cold_until[key] = time.monotonic() + COLD_AFTER_FAILURE_S
                        return None
                    self._warm[key] = warm
                try:
                    pid = warm.fork(args, cwd, env)
                except RuntimeError:
                    self._warm.pop(key, None)
                    raise
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
        host, pid, started = [*run.tags[PID_TAG].split(":"), "", "", ""][:3]
        if host != socket.gethostname() or not pid.isdigit() or _start_time(int(pid)) != started:
            return False  # another machine's process, or it ended: nothing of the run's to stop
        self._instance.report_run_canceling(run)
        try:
            os.kill(int(pid), signal.SIGINT)
        except OSError:
            return False
        return True

    def dispose(self) -> None:
        with self._lock:
            for warm in self._warm.values():
                warm.close()
            self._warm.clear()


__all__ = ["PID_TAG", "WarmRunLauncher"]
