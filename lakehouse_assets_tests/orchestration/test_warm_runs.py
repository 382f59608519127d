"""The warm run launcher, on a real Dagster instance and a code location of plain Python jobs:
runs are Dagster's run worker forked from one warm process, a run whose process is killed is
failed with its exit code (so run retries see it), a terminated run ends cancelled, and an
edited module makes the next run start from a new warm process."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import dagster as dg
from dagster._core.instance_for_test import instance_for_test
from dagster._core.test_utils import in_process_test_workspace, poll_for_finished_run
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

from lakehouse_assets.lib.accel.warm_runs import PID_TAG
from lakehouse_assets_tests.orchestration import launched_jobs

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = {"run_launcher": {"module": "lakehouse_assets.lib.accel.warm_runs", "class": "WarmRunLauncher"}}


def _launch(instance: dg.DagsterInstance, workspace, report: Path, sleep_s: float = 0.0) -> dg.DagsterRun:
    location = next(iter(workspace.get_code_location_entries().values())).code_location
    remote_job = location.get_repository("__repository__").get_full_job("report_process")
    config = {"ops": {"record_process": {"config": {"path": str(report), "sleep_s": sleep_s}}}}
    run = instance.create_run_for_job(
        job_def=launched_jobs.defs.resolve_job_def("report_process"),
        run_config=config,
        remote_job_origin=remote_job.get_remote_origin(),
        job_code_origin=remote_job.get_python_origin(),
    )
    return instance.launch_run(run.run_id, workspace)


def _process_of(report: Path, timeout_s: float = 60) -> tuple[int, int, int]:
    """The run process's pid, its parent's (the supervisor) and its grandparent's (the warm process)."""
    deadline = time.monotonic() + timeout_s
    while not report.exists() or not report.read_text():
        assert time.monotonic() < deadline, "the run's op never ran"
        time.sleep(0.1)
    pid, parent, grandparent = report.read_text().split()
    return int(pid), int(parent), int(grandparent)


def _is_warm_process(pid: int) -> bool:
    return b"run_forker" in Path(f"/proc/{pid}/cmdline").read_bytes()


def _engine_messages(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return [
        r.message
        for r in instance.all_logs(run_id)
        if r.is_dagster_event and r.dagster_event.event_type_value == "ENGINE_EVENT"
    ]


def test_runs_fork_from_one_warm_process_and_crashes_and_cancels_are_reported(tmp_path: Path) -> None:
    origin = LoadableTargetOrigin(
        executable_path=sys.executable, module_name=launched_jobs.__name__, working_directory=str(REPO)
    )
    with instance_for_test(overrides=LAUNCHER) as instance, in_process_test_workspace(instance, origin) as workspace:
        # Two runs: the same warm process forks a supervisor for each, which forks the run.
        warm = set()
        for number in (1, 2):
            report = tmp_path / f"run{number}.txt"
            run = _launch(instance, workspace, report)
            finished = poll_for_finished_run(instance, run.run_id, timeout=120)
            assert finished.status == dg.DagsterRunStatus.SUCCESS, _engine_messages(instance, run.run_id)
            pid, _, warm_pid = _process_of(report)
            assert finished.tags[PID_TAG].split(":")[1] == str(pid)
            assert any(
                "forked from the code location's warm process" in m for m in _engine_messages(instance, run.run_id)
            )
            warm.add(warm_pid)
        (warm_pid,) = warm  # both runs forked from one warm process
        assert _is_warm_process(warm_pid)

        # A run process killed mid-run: the run fails, naming the signal.
        report = tmp_path / "killed.txt"
        run = _launch(instance, workspace, report, sleep_s=60)
        pid, _, _ = _process_of(report)
        os.kill(pid, signal.SIGKILL)
        finished = poll_for_finished_run(instance, run.run_id, timeout=60)
        assert finished.status == dg.DagsterRunStatus.FAILURE
        assert any("unexpectedly" in m or "signal" in m for m in _engine_messages(instance, run.run_id)), (
            _engine_messages(instance, run.run_id)
        )

        # A terminated run: Dagster's run worker ends it cancelled.
        report = tmp_path / "terminated.txt"
        run = _launch(instance, workspace, report, sleep_s=60)
        _process_of(report)
        assert instance.run_launcher.terminate(run.run_id)
        finished = poll_for_finished_run(instance, run.run_id, timeout=60)
        assert finished.status == dg.DagsterRunStatus.CANCELED

        # An edited module: the warm process steps aside and a new one serves the next run.
        module_file = Path(launched_jobs.__file__)
        os.utime(module_file)
        report = tmp_path / "after_edit.txt"
        run = _launch(instance, workspace, report)
        assert poll_for_finished_run(instance, run.run_id, timeout=120).status == dg.DagsterRunStatus.SUCCESS
        assert any("forked from the code location's warm process" in m for m in _engine_messages(instance, run.run_id))
        _, _, new_warm_pid = _process_of(report)
        assert new_warm_pid != warm_pid and _is_warm_process(new_warm_pid)
        assert (
            not Path(f"/proc/{warm_pid}").exists()
            or b"run_forker" not in Path(f"/proc/{warm_pid}/cmdline").read_bytes()
        )


def test_with_warm_runs_off_each_run_is_a_new_process_and_a_killed_one_fails(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LAKEHOUSE_WARM_RUNS", "0")
    origin = LoadableTargetOrigin(
        executable_path=sys.executable, module_name=launched_jobs.__name__, working_directory=str(REPO)
    )
    with instance_for_test(overrides=LAUNCHER) as instance, in_process_test_workspace(instance, origin) as workspace:
        run = _launch(instance, workspace, tmp_path / "cold.txt")
        assert poll_for_finished_run(instance, run.run_id, timeout=120).status == dg.DagsterRunStatus.SUCCESS
        assert any("started as a new process" in m for m in _engine_messages(instance, run.run_id))
        _, parent, _ = _process_of(tmp_path / "cold.txt")
        assert parent == os.getpid()  # started by the launcher itself, no warm process between

        run = _launch(instance, workspace, tmp_path / "cold-killed.txt", sleep_s=60)
        pid, _, _ = _process_of(tmp_path / "cold-killed.txt")
        os.kill(pid, signal.SIGKILL)
        assert poll_for_finished_run(instance, run.run_id, timeout=60).status == dg.DagsterRunStatus.FAILURE
