"""Where bronze's ingestion loses to a plain Spark batch (section 3): the plain batch against the
same work as a streaming query, and against the framework's micro-batch handler with one piece
left out at a time (``python -m bench.bronze_split``).

One warm embedded session, the framework's Spark settings. The landed files are section 3's
(``--big-rows`` events in one generated file and ``--big-files`` - 1 copies, two in ten
gzipped). Each repetition runs every variant once, in turn, into a fresh output folder:

* ``plain``: ``bench/plain_pipeline.py``'s batch (read, parse, cache, two Delta appends);
* ``plain-streaming``: the same handler as an ``availableNow`` ``foreachBatch`` query;
* ``handler``: the framework's pieces as bronze's micro-batch runs them (landed names decoded,
  the demo's parsing, expectation flags, the counting pass, appends with transaction ids, the
  written samples), as a batch;
* ``handler-no-<piece>``: the same without ``count`` (the counting pass), ``decode`` (the file
  names' URL decoding) or ``extras`` (samples and transaction ids).

Prints each run and the medians. Expect noise of a few seconds per run on a 2-core VM: a piece
counts only where its median gap holds over several repetitions.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import FULL, log, median


def _variants(spark, files: list[str], folder: str) -> dict[str, Callable[[str], None]]:
    from pyspark.sql import functions as F

    from bench import plain_pipeline as plain_script
    from lakehouse_assets.defs.bronze.events import parse_event_lines
    from lakehouse_assets.lib import IS_JSON_OBJECT, expect_or_quarantine
    from lakehouse_assets.lib.declare.expectations import split_by_expectations, with_expectation_flags
    from lakehouse_assets.lib.engine.reading.landing_names import as_landed
    from lakehouse_assets.lib.engine.report import sample_written
    from lakehouse_assets.lib.engine.writing.counting import expectation_counts

    expectations = [expect_or_quarantine("json_object", IS_JSON_OBJECT)]
    bad_columns = ["raw_line", "_source_file", "_ingested_at"]

    def tagged(lines, source):
        return lines.select("value", source.alias("_source_file"), F.current_timestamp().alias("_ingested_at"))

    def plain_handler(lines, out: str) -> None:
        rows = plain_script.parse_events(lines).persist()
        rows.where("is_object").select(*plain_script.BRONZE_COLUMNS).write.format("delta").mode("append").save(
            f"{out}/table"
        )
        rows.where("NOT is_object").select(*bad_columns).write.format("delta").mode("append").save(f"{out}/quarantine")
        rows.unpersist()

    def plain(out: str) -> None:
        plain_handler(tagged(spark.read.text(files), F.col("_metadata.file_path")), out)

    def plain_streaming(out: str) -> None:
        lines = tagged(spark.readStream.format("text").load(folder), F.col("_metadata.file_path"))
        query = (
            lines.writeStream.foreachBatch(lambda batch, _: plain_handler(batch, out))
            .option("checkpointLocation", f"{out}/checkpoint")
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    def handler(out: str, count: bool = True, decode: bool = True, extras: bool = True) -> None:
        path = F.col("_metadata.file_path")
        flagged = with_expectation_flags(
            parse_event_lines(tagged(spark.read.text(files), as_landed(path) if decode else path)), expectations
        ).persist()
        if count:
            expectation_counts(flagged, expectations)
        kept, quarantined, _ = split_by_expectations(flagged, expectations)
        for rows, table in (
            (kept.select(*plain_script.BRONZE_COLUMNS), "table"),
            (quarantined.select(*bad_columns), "quarantine"),
        ):
            write = rows.write.format("delta").mode("append")
            if extras:
                write = write.option("txnAppId", f"{out}/{table}").option("txnVersion", 0)
            write.save(f"{out}/{table}")
            if extras:
                sample_written(rows)
        flagged.unpersist()

    return {
        "plain": plain,
        "plain-streaming": plain_streaming,
        "handler": handler,
        "handler-no-count": lambda out: handler(out, count=False),
        "handler-no-decode": lambda out: handler(out, decode=False),
        "handler-no-extras": lambda out: handler(out, extras=False),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--big-rows", type=int, default=FULL.big_rows)
    parser.add_argument("--big-files", type=int, default=FULL.big_files)
    args = parser.parse_args(argv)

    from bench.common import Config
    from bench.sections.throughput import throughput_files
    from lakehouse_assets.lib.spark.session import get_spark

    work = Path(tempfile.mkdtemp(prefix="bench-bronze-split-"))
    try:
        batch = throughput_files(Config("split", big_rows=args.big_rows, big_files=args.big_files), work)
        files = [str(f) for f in batch["files"]]
        spark = get_spark()
        variants = _variants(spark, files, str(Path(files[0]).parent))
        variants["plain"](str(work / "warm-up"))
        times: dict[str, list[float]] = {name: [] for name in variants}
        for rep in range(args.reps):
            for name, run in variants.items():
                out = work / f"{name}-{rep}"
                started = time.monotonic()
                run(str(out))
                times[name].append(round(time.monotonic() - started, 1))
                shutil.rmtree(out, ignore_errors=True)
                log(f"rep {rep + 1}: {name} {times[name][-1]:.1f}s")
        base = median(times["plain"])
        log(f"{batch['lines']:,} lines in {len(files)} files; medians of {args.reps}:")
        for name, runs in times.items():
            log(f"  {name:20s} {median(runs):5.1f}s  {median(runs) / base:4.2f}x plain  ({', '.join(map(str, runs))})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
