"""Admission: how many runs Dagster's queue lets in at once, derived from the engine's cores.

Every run's steps are Spark queries. When runs are clients of one Spark Connect engine
(``SPARK_REMOTE``), a run's process mostly waits on the engine, so the engine serves two runs per
core before runs only slow each other down; with an embedded session each run is a Spark driver
of its own (a JVM using every core of this machine), so one per core. Runs over the limit stay
queued in Dagster's queue, without a process, until a running one ends: a burst of landings
queues instead of timing out on an engine it overloads.

``dagster.yaml`` names :class:`EngineRunCoordinator` as the instance's run coordinator; a
``max_concurrent_runs`` under ``concurrency: runs:`` overrides the derived limit.
"""

from __future__ import annotations

import os
from typing import Any

from dagster import QueuedRunCoordinator

from lakehouse_assets.lib import settings as lakehouse_settings
from lakehouse_assets.lib.orchestrate.dagster_internals import ConfigurableClassData

RUNS_PER_CORE_AS_CLIENTS = 2
ADMISSION_VARIABLES = ("SPARK_REMOTE", "LAKEHOUSE_ENGINE_CORES")


def engine_cores(current: lakehouse_settings.Settings) -> int:
    """The cores of the engine the runs use: ``LAKEHOUSE_ENGINE_CORES``, else those this process
    may run on (its CPU affinity, which a container's cpuset narrows)."""
    return current.engine_cores if current.engine_cores > 0 else (len(os.sched_getaffinity(0)) or 1)


def runs_the_engine_serves(current: lakehouse_settings.Settings) -> int:
    """How many runs at once the engine serves: two per core for clients, one for embedded ones.

    :param current: the settings in effect (``SPARK_REMOTE``, ``LAKEHOUSE_ENGINE_CORES``).
    """
    cores = engine_cores(current)
    return cores * RUNS_PER_CORE_AS_CLIENTS if current.spark_remote else cores


class EngineRunCoordinator(QueuedRunCoordinator):
    """Dagster's queued run coordinator whose run limit, unless configured, fits the engine.

    The limit is derived once, when the instance loads its run coordinator (the daemon, the
    webserver), from ``SPARK_REMOTE`` and ``LAKEHOUSE_ENGINE_CORES`` in that process's
    environment (only those: a bad value of another setting must not stop the instance loading).

    :param max_concurrent_runs: a fixed limit instead of :func:`runs_the_engine_serves` (Dagster
        takes one under ``concurrency: runs:`` in ``dagster.yaml`` over this one).
    :param kwargs: the rest of :class:`dagster.QueuedRunCoordinator`'s configuration.
    """

    def __init__(
        self,
        max_concurrent_runs: int | None = None,
        inst_data: ConfigurableClassData | None = None,
        **kwargs: Any,
    ) -> None:
        if max_concurrent_runs is None:
            environ = {name: os.environ[name] for name in ADMISSION_VARIABLES if name in os.environ}
            max_concurrent_runs = runs_the_engine_serves(lakehouse_settings.current(environ))
        super().__init__(max_concurrent_runs=max_concurrent_runs, inst_data=inst_data, **kwargs)
