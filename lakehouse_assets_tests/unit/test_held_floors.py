"""Where a freshness listing starts: at the least mark of the tables counted. A table no longer
declared keeps its last record; counted, it would hold every listing as far back as its last
run, whatever the declared tables hold. Spark-free."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lakehouse_assets.lib.engine.freshness import freshness, held_path
from lakehouse_assets.lib.engine.intake.late_files import Entry, LateFiles
from lakehouse_assets.lib.paths import LakehousePaths

pytestmark = pytest.mark.unit


class Recording(LateFiles):
    """Listings as usual, keeping the time each was asked from."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[int] = []

    def files(self, folder: str, globs: tuple[str, ...], after_ns: int) -> list[Entry]:
        self.asked.append(after_ns)
        return super().files(folder, globs, after_ns)


def hold(paths: LakehousePaths, table: str, folder: Path, held_ns: int) -> None:
    path = Path(held_path(paths, table))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({str(folder): {"held_ns": held_ns, "globs": ["*.jsonl"]}}))


def test_a_table_no_longer_declared_does_not_hold_the_listing_back(tmp_path: Path) -> None:
    paths = LakehousePaths(str(tmp_path / "root"))
    folder = tmp_path / "landing"
    folder.mkdir()
    arrived = []
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        (folder / f"_{name}").write_text("{}\n")
        os.rename(folder / f"_{name}", folder / name)
        arrived.append((folder / name).stat().st_ctime_ns)
    hold(paths, "current", folder, arrived[1])  # holds a and b
    hold(paths, "dropped", folder, -1)  # its last run held nothing
    now = arrived[2] + 5_000_000_000

    declared, every = Recording(), Recording()
    counted = freshness(paths, "current", now, late=declared, counted=["current"])
    uncounted = freshness(paths, "current", now, late=every)

    assert declared.asked == [arrived[1]] and every.asked == [-1]
    for found in (counted, uncounted):
        assert (found.oldest, found.waiting, found.behind_s) == ("c.jsonl", {str(folder): 1}, 5.0)
