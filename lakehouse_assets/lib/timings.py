"""Where a run's time goes: the framework reports named spans to whoever listens.

Each piece of a table's step reports one :class:`Span` when it ends: ``session_start`` (a
Spark session made for the run), ``previous_state`` (reading the last materialization from
Dagster), ``run_table`` (the table's query, every micro-batch), ``query`` (one streaming query,
with its progress reports), ``metadata`` (describing an output) and ``checks`` (the step's checks,
side by side). With no listener a span costs a clock read; the benchmark listens
(``bench/instrument.py``), and so can a profiler or a tracing exporter of your own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Span:
    """One timed piece of a run.

    :param phase: what ran (see the module).
    :param table: the table it ran for; ``None`` for the process's own work (a session start).
    :param started: when it began (``time.monotonic()``).
    :param seconds: how long it took.
    :param details: what the piece adds, e.g. ``progress`` (a query's progress reports as dicts).
    """

    phase: str
    table: str | None
    started: float
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)


Listener = Callable[[Span], None]
_log = logging.getLogger(__name__)
_listeners: list[Listener] = []
_lock = threading.Lock()


def add_listener(listener: Listener) -> Callable[[], None]:
    """Call ``listener`` with every span this process reports from now on; returns its remover.

    :param listener: called in the thread that ran the span; it should be quick. What it raises
        is logged and dropped: a listener never fails the run it times.
    """
    with _lock:
        _listeners.append(listener)

    def remove() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return remove


def listening() -> bool:
    """Whether anyone listens (so a caller gathers costly ``details`` only then)."""
    return bool(_listeners)


@contextmanager
def span(phase: str, table: str | None = None) -> Iterator[dict[str, Any]]:
    """Time the block as one span; the block may add ``details`` to the dict it gets.

    :param phase: what runs in the block.
    :param table: the table it runs for.
    """
    details: dict[str, Any] = {}
    started = time.monotonic()
    try:
        yield details
    finally:
        if _listeners:
            done = Span(phase, table, started, time.monotonic() - started, details)
            for listener in list(_listeners):
                try:
                    listener(done)
                except Exception:  # noqa: BLE001 - a listener never fails a run or hides its error
                    _log.warning("a timing listener failed on %s of %s", phase, table, exc_info=True)
