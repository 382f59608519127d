"""The warm process behind :class:`~lakehouse_assets.lib.accel.warm_runs.WarmRunLauncher`.

``python -m lakehouse_assets.lib.accel.run_forker <module> <answer fd>`` imports Dagster,
its run worker, the Spark Connect client and the code location's module once and says ``ready``
on the answer file descriptor (not stdout, which the runs' output shares). It then reads one
request per line on its stdin (the arguments of ``dagster api execute_run``, the environment and
the folder to run it in) and answers each with the pid of a run process forked for it, or with
``stale``, forking nothing, when a module it imported from outside the installed packages (the
project's own code) or that module's folder changed on disk since: its launcher then starts a
new one. It ends at the end of its stdin, that is when the launcher's process ends. It starts no
thread, so forking it is safe.

Each run gets a supervisor forked from this process, which forks the run's process and waits
for it. A run whose process died before the run finished (killed, out of memory) is reported
failed with the exit code, as Dagster's code server does for the processes it starts, so run
retries and the UI see what they would see with Dagster's own launcher.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import sys
import traceback
from typing import Any

from lakehouse_assets.lib.accel.warm_workers import source_mtimes, sources_changed
from lakehouse_assets.lib.orchestrate.dagster_internals import RUN_WORKER_MODULES

PRELOAD = (*RUN_WORKER_MODULES, "pyspark.sql.connect.session")


def report_crash(execute_run_args: str, exit_code: int) -> None:
    """End the run of ``dagster api execute_run``'s serialized arguments if its process ended
    (with ``exit_code``) before the run did: failed, or cancelled if it was being cancelled."""
    from dagster import DagsterInstance, DagsterRunStatus, deserialize_value

    from lakehouse_assets.lib.orchestrate.dagster_internals import ExecuteRunArgs, get_run_crash_explanation

    args = deserialize_value(execute_run_args, ExecuteRunArgs)
    with DagsterInstance.from_ref(args.instance_ref) as instance:  # type: ignore[arg-type]
        run = instance.get_run_by_id(args.run_id)
        if run is None or run.is_finished:
            return
        message = get_run_crash_explanation(prefix=f"Run execution process for {run.run_id}", exit_code=exit_code)
        instance.report_engine_event(message, run)
        if run.status == DagsterRunStatus.CANCELING:
            instance.report_run_canceled(run)
        else:
            instance.report_run_failed(run)


def _watched() -> dict[str, int]:
    """The files of the modules imported from outside the installed packages, and their
    folders (a new module in a package changes its folder), with their modification times."""
    installed = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
    files = [getattr(module, "__file__", None) or "" for module in list(sys.modules.values())]
    own = [f for f in files if f and not os.path.realpath(f).startswith(installed)]
    return source_mtimes([*own, *{os.path.dirname(f) for f in own}])


def _work(request: dict[str, Any]) -> None:
    """The run's process: ``dagster api execute_run`` as ``python -m dagster`` would run it."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["dagster", *request["args"]]
        from lakehouse_assets.lib.orchestrate.dagster_internals import run_dagster_cli

        # An interrupt (a cancellation) before the run worker listens for one is kept for it.
        run_dagster_cli()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # noqa: BLE001 - a forked process must end in os._exit, never unwind
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _supervise(request: dict[str, Any], pid_pipe: int, answers: int) -> None:
    """Fork the run's process, send its pid, wait for it; end the run if it died first (the
    run worker exits 0 even when it could not record the run's end)."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
        os.close(answers)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)  # not the launcher's requests
        os.close(devnull)
        worker = os.fork()
        if worker == 0:
            os.close(pid_pipe)
            _work(request)
        os.write(pid_pipe, str(worker).encode())
        os.close(pid_pipe)
        exit_code = os.waitstatus_to_exitcode(os.waitpid(worker, 0)[1])
        report_crash(request["args"][-1], exit_code)
    except BaseException:  # noqa: BLE001 - a forked process must end in os._exit, never unwind
        traceback.print_exc()
    finally:
        os._exit(0)


def _fork(request: dict[str, Any], answers: int) -> int:
    """The pid of a run process forked for ``request`` (0: it could not be forked)."""
    with contextlib.suppress(Exception):  # or every run process would write it again
        sys.stdout.flush()
        sys.stderr.flush()
    read_end, write_end = os.pipe()
    if os.fork() == 0:
        os.close(read_end)
        _supervise(request, write_end, answers)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answer:
        return int(answer.read() or 0)


def _answer(answers: int, answer: dict[str, Any]) -> None:
    os.write(answers, json.dumps(answer).encode() + b"\n")


def serve(module: str, answers: int) -> None:
    for name in (*PRELOAD, *([module] if module else [])):
        # What fails to import here fails again in the run's own process, which reports why.
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    watched = _watched()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the supervisors
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the end of stdin ends this process
    _answer(answers, {"ready": True})
    while line := sys.stdin.buffer.readline():
        if sources_changed(watched):
            _answer(answers, {"stale": True})
            return
        _answer(answers, {"pid": _fork(json.loads(line), answers)})


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
