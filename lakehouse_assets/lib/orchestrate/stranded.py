"""No stranded files: when a source's last sensor run failed or was interrupted, what its
checkpoints have not drained is still work, even if no new file arrives. The sensor asks for a
new run of that source once per failed run, waiting longer after each failure in a row so a
permanent error does not spin."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

ENDED_BADLY = (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)
RETRY_OF_TAG = "lakehouse/retry_of"


@dataclass(frozen=True)
class RetryPolicy:
    """How long the sensor waits after a failed run before it asks for the next one: ``first_s``,
    doubled for every further failure in a row, at most ``max_s``."""

    first_s: float = 10.0
    max_s: float = 1800.0

    def wait_s(self, failures_in_a_row: int) -> float:
        return min(self.max_s, self.first_s * 2 ** max(0, failures_in_a_row - 1))


def retry_request(
    instance: dg.DagsterInstance, tags: dict[str, str], now: float, policy: RetryPolicy
) -> dg.RunRequest | dg.SkipReason | None:
    """A run request when the newest run with ``tags`` ended badly and its back-off has passed;
    a skip reason while it has not; None when the newest run succeeded (or there is none).

    :param instance: the Dagster instance holding the runs.
    :param tags: the tags the sensor puts on its runs (the source's).
    :param now: the time now (seconds since the epoch).
    :param policy: the back-off.
    """
    records = instance.get_run_records(filters=dg.RunsFilter(tags=tags), limit=20)
    failures = 0
    for record in records:
        if record.dagster_run.status not in ENDED_BADLY:
            break
        failures += 1
    if failures == 0:
        return None
    newest = records[0]
    run = newest.dagster_run
    ended = newest.end_time or newest.update_timestamp.timestamp()
    wait = policy.wait_s(failures)
    what = f"run {run.run_id[:8]} of {run.job_name} ended {run.status.value}"
    if now - ended < wait:
        return dg.SkipReason(
            f"{what} ({failures} in a row); asking for another run {wait - (now - ended):.0f}s from now, "
            "since what it did not drain is still to do."
        )
    return dg.RunRequest(
        run_key=f"retry-of-{run.run_id}",
        tags={**tags, RETRY_OF_TAG: run.run_id, "lakehouse/new_files": "0", "lakehouse/first_new_file": ""},
    )
