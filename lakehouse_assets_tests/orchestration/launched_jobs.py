"""A code location of plain Python jobs (no Spark) for the run launcher's tests: each run writes
its process id, its parent's and its grandparent's to the file its config names, then sleeps as
long as told."""

import os
import time

import dagster as dg


class Report(dg.Config):
    path: str
    sleep_s: float = 0.0


@dg.op
def record_process(config: Report) -> None:
    parent = os.getppid()
    with open(f"/proc/{parent}/stat") as stat:
        grandparent = int(stat.read().rsplit(")", 1)[1].split()[1])
    with open(config.path, "w") as out:
        out.write(f"{os.getpid()} {parent} {grandparent}")
    time.sleep(config.sleep_s)


@dg.job(executor_def=dg.in_process_executor)
def report_process() -> None:
    record_process()


defs = dg.Definitions(jobs=[report_process])
