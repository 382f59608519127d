"""The writer's OS lock on a local data root: a second writer waits, says so, and goes on after the
first lets go. Spark-free: the lock is taken around a table's query by every run on the machine."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from lakehouse_assets.lib.engine.state.storage import exclusive_lock

pytestmark = pytest.mark.unit


def test_a_second_writer_waits_for_the_first_and_says_so(tmp_path: Path) -> None:
    lock_file = tmp_path / "locks" / "orders.lock"
    held = threading.Event()
    release = threading.Event()
    timeline: list[str] = []

    def first_writer() -> None:
        with exclusive_lock(lock_file):
            timeline.append("first in")
            held.set()
            release.wait(10)
            timeline.append("first out")

    waits: list[float | None] = []
    first = threading.Thread(target=first_writer)
    first.start()
    assert held.wait(10)

    def second_writer() -> None:
        with exclusive_lock(lock_file, lambda seconds=None: waits.append(seconds)):
            timeline.append("second in")

    second = threading.Thread(target=second_writer)
    second.start()
    time.sleep(0.3)
    assert timeline == ["first in"] and waits == [None]  # blocked, and it said it is waiting
    release.set()
    first.join(10)
    second.join(10)
    assert timeline == ["first in", "first out", "second in"]
    assert len(waits) == 2 and waits[1] is not None and waits[1] >= 0.2


def test_no_lock_file_means_no_lock(tmp_path: Path) -> None:
    with exclusive_lock(None), exclusive_lock(None):
        pass
    assert not any(tmp_path.iterdir())
