"""The demo's class-archive training run (``make setup``): the events chain on a scratch root,
then a clean driver exit, which is when the JVM writes the archive
(:func:`lakehouse_assets.lib.accel.class_archive.build` runs this module, from the repository
root with it on ``PYTHONPATH``)."""

from __future__ import annotations

import tempfile

import dagster as dg

from lakehouse_assets.lib.accel.class_archive import stop_and_dump
from lakehouse_assets.lib.paths import LakehousePaths

CHAIN = [
    "bronze_events",
    "bronze_events_quarantine",
    "silver_events",
    "silver_events_quarantine",
    "gold_hourly_revenue",
]


def main() -> None:
    from lakehouse_assets.definitions import build_definitions
    from lakehouse_assets.generate import GeneratorOptions, generate

    with tempfile.TemporaryDirectory(prefix="lakehouse-cds-") as root:
        paths = LakehousePaths(root)
        generate(paths, GeneratorOptions(files=2, rows=200, seed=7, bad_lines=0.02), ["events"])
        defs = build_definitions(paths)
        dg.materialize(list(defs.assets or []), resources=defs.resources, selection=CHAIN)
        stop_and_dump()


if __name__ == "__main__":
    main()
