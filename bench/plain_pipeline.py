"""The baseline: the events pipeline as a user would hand-write it in plain PySpark + Delta.

    python bench/plain_pipeline.py --root /path/to/root            # bronze -> silver -> gold
    python bench/plain_pipeline.py --root R --batch-bronze OUT      # plain batch read-and-write

Same availableNow queries, same semantics, one process, no framework; with ``SPARK_REMOTE`` set
it is a client of that Spark Connect engine, like a framework run (so its ``foreachBatch``
handlers use the batch's own session and Delta through SQL, as Spark Connect requires): bronze_events (JSON lines
parsed into typed columns, the rest in ``_rescued_data``, non-objects to a quarantine table),
silver_events (typed, enriched, four expectations to a quarantine table, insert-only MERGE on
``event_id``), gold_hourly_revenue (silver's change data feed; the hour windows a batch touches
are recomputed from the event_date partitions they live in and replaced in one MERGE). Every
write is idempotent with Delta's txnAppId/txnVersion, as Delta's docs recommend for
foreachBatch. Of ``lakehouse_assets`` only the Spark settings are imported
(``lakehouse_assets/lib/spark/conf.py``, and the engine's token from ``engine_auth.py``; no Dagster): the same Delta jars, small-machine sizing
and driver class archive as a framework run, so the comparison measures the framework, not tuning.

Prints one JSON line of timings at the end (``BENCH_JSON {...}``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

STARTED = time.monotonic()

from pyspark.sql import DataFrame, SparkSession, Window  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from lakehouse_assets.lib.spark.conf import spark_conf  # noqa: E402
from lakehouse_assets.lib.spark.engine_auth import client_token, client_url  # noqa: E402
from lakehouse_assets.lib.spark.launch_secrets import embedded_driver_secrets  # noqa: E402

EVENT_FIELDS = {
    "event_id": "string", "event_time": "string", "user_id": "string", "event_type": "string",
    "product_id": "string", "category": "string", "page": "string", "user_agent": "string",
    "amount": "double",
}  # fmt: skip
BRONZE_COLUMNS = [*EVENT_FIELDS, "_rescued_data", "_source_file", "_ingested_at"]
SILVER_COLUMNS = [
    "event_id", "event_time", "event_date", "user_id", "event_type", "product_id",
    "category", "amount", "page", "device_type", "customer_tier",
]  # fmt: skip
BLANK = r"(?U)^\s*$"  # blank: Unicode white space only, or nothing
ISO_TIMESTAMP = r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}([.,]\d{1,9})?)?([Zz]|[+-]\d{2}(:?\d{2})?)?$"
RULES = {
    "event_id_present": r"event_id IS NOT NULL AND NOT event_id RLIKE '(?U)^\\s*$'",
    "event_time_valid": "event_ts IS NOT NULL",
    "event_type_known": "event_type IN ('page_view', 'add_to_cart', 'purchase')",
    "purchase_amount_valid": "event_type IS DISTINCT FROM 'purchase' OR "
    "(amount IS NOT NULL AND amount >= 0 AND NOT isnan(amount))",
}


def spark_session() -> SparkSession:
    if os.environ.get("SPARK_REMOTE"):  # the engine's launch holds the settings below; it wants its token
        return SparkSession.builder.remote(client_url(os.environ["SPARK_REMOTE"], client_token())).getOrCreate()
    # The settings a framework run's embedded session starts with (Dagster-free module): Delta,
    # the small-machine sizing and the driver's class archive, so only the framework differs.
    conf = spark_conf(extra={"spark.app.name": "plain_pipeline"})
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    with embedded_driver_secrets(conf["spark.master"]):  # a cluster's credentials, off the command line
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# -- transforms (pure) ----------------------------------------------------------------------


def parse_events(lines: DataFrame) -> DataFrame:
    """Non-blank lines to typed columns, ``_rescued_data`` and an ``is_object`` flag."""
    lines = lines.where(~F.col("value").rlike(BLANK)).withColumnRenamed("value", "raw_line")
    schema = ", ".join(f"`{n}` {t}" for n, t in EVENT_FIELDS.items())
    as_map = F.from_json("raw_line", "map<string,variant>")
    parsed = F.from_json("raw_line", schema)
    staged = lines.select("*", as_map.alias("m"), parsed.alias("p"))
    declared = F.array(*[F.lit(n) for n in EVENT_FIELDS])

    def rescue(key, value):  # undeclared fields, and typed values that did not parse
        keep = ~F.array_contains(declared, key)
        return keep | ((key == "amount") & F.col("p.amount").isNull() & ~F.call_function("is_variant_null", value))

    rescued = F.map_filter("m", rescue)
    return staged.select(
        "raw_line", "_source_file", "_ingested_at",
        *[F.col("p")[n].alias(n) for n in EVENT_FIELDS],
        F.when(F.size(rescued) > 0, F.to_json(rescued)).alias("_rescued_data"),
        F.col("m").isNotNull().alias("is_object"),
    )  # fmt: skip


def clean_events(bronze: DataFrame, customers: DataFrame) -> DataFrame:
    tiers = F.broadcast(
        customers.where("is_current").select(F.col("customer_id").alias("cid"), F.col("tier").alias("customer_tier"))
    )
    raw = F.col("event_time")
    normalized = F.regexp_replace(F.regexp_replace(raw, ",", "."), "[Tt]", "T")
    event_ts = F.when(raw.rlike(ISO_TIMESTAMP), F.try_to_timestamp(F.regexp_replace(normalized, "z$", "Z")))
    ua = F.col("user_agent")
    typed = bronze.withColumn("event_ts", event_ts)
    return (
        typed.join(tiers, typed["user_id"] == tiers["cid"], "left").drop("cid")
        .withColumn("event_date", F.to_date("event_ts"))
        .withColumn("device_type", F.when(ua.contains("Mobile"), "mobile").when(ua.contains("Tablet"), "tablet").otherwise("desktop"))
        .withColumn("failed_expectations", F.filter(F.array(*[F.when(~F.coalesce(F.expr(c), F.lit(False)), F.lit(n)) for n, c in RULES.items()]), lambda x: x.isNotNull()))
    )  # fmt: skip


def hourly_revenue(events: DataFrame) -> DataFrame:
    purchases = events.where(F.col("event_type") == "purchase")
    return (
        purchases.groupBy(F.window("event_time", "1 hour").alias("w"), F.coalesce("category", F.lit("unknown")).alias("category"))
        .agg(F.sum("amount").alias("revenue"), F.count(F.lit(1)).alias("orders"), F.count_distinct("user_id").alias("buyers"))
        .select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "category", "revenue", "orders", "buyers")
    )  # fmt: skip


# -- writes ---------------------------------------------------------------------------------


def append(df: DataFrame, path: str, app_id: str, batch_id: int, **options: str) -> None:
    writer = df.write.format("delta").mode("append").option("txnAppId", app_id).option("txnVersion", batch_id)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(path)


def is_delta(path: str) -> bool:
    return Path(path, "_delta_log").is_dir()


def merge_idempotent(source: DataFrame, statement: str, app_id: str, batch_id: int) -> None:
    """``MERGE INTO`` from ``source`` (the view ``s``) with Delta's txn identity of the batch."""
    spark = source.sparkSession
    view = f"merge_source_{app_id}"
    source.createOrReplaceTempView(view)
    spark.conf.set("spark.databricks.delta.write.txnAppId", app_id)
    spark.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
    try:
        spark.sql(statement.format(source=f"{view} AS s"))
    finally:
        spark.catalog.dropTempView(view)
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")


class Pipeline:
    def __init__(self, spark: SparkSession, root: str):
        self.spark = spark
        self.root = root.rstrip("/")

    def table(self, name: str) -> str:
        return f"{self.root}/tables/{name}"

    def checkpoint(self, name: str) -> str:
        return f"{self.root}/checkpoints/{name}"

    def run(self, name: str, df: DataFrame, handler) -> dict:
        started = time.monotonic()
        query = (
            df.writeStream.queryName(name).foreachBatch(handler).trigger(availableNow=True)
            .option("checkpointLocation", self.checkpoint(name)).start()
        )  # fmt: skip
        query.awaitTermination()
        progress = [
            {"batchId": p.batchId, "numInputRows": p.numInputRows, "durationMs": dict(p.durationMs)}
            for p in query.recentProgress
        ]
        return {"duration_s": round(time.monotonic() - started, 3), "progress": progress}

    def bronze_events(self) -> dict:
        landing = f"{self.root}/landing/events"
        Path(landing).mkdir(parents=True, exist_ok=True)
        lines = (
            self.spark.readStream.format("text")
            .option("pathGlobFilter", "*.{json,jsonl,json.gz,jsonl.gz}").option("ignoreMissingFiles", "true")
            .load(landing)
            .select("*", F.col("_metadata.file_path").alias("_source_file"), F.current_timestamp().alias("_ingested_at"))
        )  # fmt: skip

        table, quarantine = self.table("bronze_events"), self.table("bronze_events_quarantine")

        def handle(batch: DataFrame, batch_id: int) -> None:
            rows = batch.persist()
            try:
                append(rows.where("is_object").select(*BRONZE_COLUMNS), table, "bronze_events", batch_id)
                bad = rows.where("NOT is_object").select("raw_line", "_source_file", "_ingested_at")
                append(bad, quarantine, "bronze_events_quarantine", batch_id)
            finally:
                rows.unpersist()

        return self.run("bronze_events", parse_events(lines), handle)

    def silver_events(self) -> dict:
        path = self.table("silver_customers")
        customers = (
            self.spark.read.format("delta").load(path) if is_delta(path)
            else self.spark.createDataFrame([], "customer_id string, tier string, is_current boolean")
        )  # fmt: skip
        events = clean_events(self.spark.readStream.format("delta").load(self.table("bronze_events")), customers)
        target, quarantine = self.table("silver_events"), self.table("silver_events_quarantine")

        def handle(batch: DataFrame, batch_id: int) -> None:
            rows = batch.persist()
            try:
                good = (
                    rows.where(F.size("failed_expectations") == 0)
                    .withColumn("event_time", F.col("event_ts"))
                    .select(*SILVER_COLUMNS)
                )
                order = [F.col(c).asc_nulls_last() for c in SILVER_COLUMNS if c != "event_id"]
                first = (
                    good.withColumn("rn", F.row_number().over(Window.partitionBy("event_id").orderBy(*order)))
                    .where("rn = 1")
                    .drop("rn")
                )
                if not is_delta(target):
                    (first.limit(0).write.format("delta").partitionBy("event_date")
                     .option("delta.enableChangeDataFeed", "true").save(target))  # fmt: skip
                merge_idempotent(
                    first, f"MERGE INTO delta.`{target}` AS t USING {{source}} ON t.event_id <=> s.event_id "
                    "WHEN NOT MATCHED THEN INSERT *", "silver_events", batch_id,
                )  # fmt: skip
                bad = rows.where(F.size("failed_expectations") > 0).select(*BRONZE_COLUMNS, "failed_expectations")
                append(bad, quarantine, "silver_events_quarantine", batch_id)
            finally:
                rows.unpersist()

        return self.run("silver_events", events, handle)

    def gold_hourly_revenue(self) -> dict:
        source = self.table("silver_events")
        target = self.table("gold_hourly_revenue")
        changes = self.spark.readStream.format("delta").option("readChangeFeed", "true").load(source)
        keys = ["window_start", "category"]

        def handle(batch: DataFrame, batch_id: int) -> None:
            spark = batch.sparkSession
            new = batch.drop("_change_type", "_commit_version", "_commit_timestamp").persist()
            try:
                dates = [r[0] for r in new.select(F.col("event_date").cast("string")).distinct().collect()]
                if not dates:
                    return
                present = [d for d in dates if d is not None]
                scope = F.col("event_date").cast("string").isin(present)
                if len(present) < len(dates):
                    scope = scope | F.col("event_date").isNull()
                touched = hourly_revenue(new).select(*keys).distinct()
                fresh = hourly_revenue(spark.read.format("delta").load(source).where(scope)).join(
                    touched, keys, "left_semi"
                )
                if not is_delta(target):
                    fresh.limit(0).write.format("delta").save(target)
                gold = spark.read.format("delta").load(target)
                stale = gold.join(touched, keys, "left_semi").select(*keys).join(fresh.select(*keys), keys, "left_anti")
                source_rows = fresh.withColumn("_delete", F.lit(False)).unionByName(
                    stale.withColumn("_delete", F.lit(True)), allowMissingColumns=True
                )
                values = ["window_end", "revenue", "orders", "buyers"]
                on = " AND ".join(f"t.{k} <=> s.{k}" for k in keys)
                changed = " OR ".join(f"NOT (t.{c} <=> s.{c})" for c in values)
                columns = keys + values
                merge_idempotent(
                    source_rows,
                    f"MERGE INTO delta.`{target}` AS t USING {{source}} ON {on} "
                    "WHEN MATCHED AND s._delete THEN DELETE "
                    f"WHEN MATCHED AND ({changed}) THEN UPDATE SET {', '.join(f'{c} = s.{c}' for c in columns)} "
                    f"WHEN NOT MATCHED AND NOT s._delete THEN INSERT ({', '.join(columns)}) "
                    f"VALUES ({', '.join(f's.{c}' for c in columns)})",
                    "gold_hourly_revenue", batch_id,
                )  # fmt: skip
            finally:
                new.unpersist()

        return self.run("gold_hourly_revenue", changes, handle)

    def batch_bronze(self, out: str) -> dict:
        """Plain Spark batch read-and-write of the landed files: same parsing, same two tables."""
        started = time.monotonic()
        files = f"{self.root}/landing/events"
        lines = (
            self.spark.read.option("pathGlobFilter", "*.{json,jsonl,json.gz,jsonl.gz}").text(files)
            .select("*", F.col("_metadata.file_path").alias("_source_file"), F.current_timestamp().alias("_ingested_at"))
        )  # fmt: skip
        rows = parse_events(lines).persist()
        rows.where("is_object").select(*BRONZE_COLUMNS).write.format("delta").mode("append").save(
            f"{out}/bronze_events"
        )
        bad = rows.where("NOT is_object").select("raw_line", "_source_file", "_ingested_at")
        bad.write.format("delta").mode("append").save(f"{out}/bronze_events_quarantine")
        rows.unpersist()
        return {"duration_s": round(time.monotonic() - started, 3)}


def verify(spark: SparkSession, root: str, other: str) -> dict:
    """Same rows in both roots? (bronze without the landing path prefix and ingestion time)."""
    checks = {
        "bronze_events": [c for c in BRONZE_COLUMNS if c not in ("_source_file", "_ingested_at")],
        "bronze_events_quarantine": ["raw_line"],
        "silver_events": SILVER_COLUMNS,
        "silver_events_quarantine": [c for c in BRONZE_COLUMNS if c not in ("_source_file", "_ingested_at")]
        + ["failed_expectations"],
        "gold_hourly_revenue": ["window_start", "window_end", "category", "revenue", "orders", "buyers"],
    }
    out = {}
    for name, columns in checks.items():
        a = spark.read.format("delta").load(f"{root}/tables/{name}").select(*columns)
        b = spark.read.format("delta").load(f"{other}/tables/{name}").select(*columns)
        if name == "gold_hourly_revenue":  # sums of doubles in another order: compare rounded
            a, b = (df.withColumn("revenue", F.round("revenue", 6)) for df in (a, b))
        out[name] = {
            "rows": a.count(),
            "other_rows": b.count(),
            "identical": a.exceptAll(b).isEmpty() and b.exceptAll(a).isEmpty(),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True, help="data root: landing/, tables/, checkpoints/")
    parser.add_argument("--tables", default="bronze_events,silver_events,gold_hourly_revenue")
    parser.add_argument("--batch-bronze", metavar="OUT", help="plain batch read-and-write into OUT instead")
    parser.add_argument(
        "--verify-against", metavar="ROOT", help="after the run, compare this root's tables with another root's"
    )
    args = parser.parse_args()
    imported = time.monotonic() - STARTED
    t = time.monotonic()
    spark = spark_session()
    result: dict = {"import_s": round(imported, 3), "spark_start_s": round(time.monotonic() - t, 3), "tables": {}}
    pipeline = Pipeline(spark, args.root)
    if args.batch_bronze:
        result["batch_bronze"] = pipeline.batch_bronze(args.batch_bronze)
    else:
        for name in args.tables.split(","):
            result["tables"][name] = getattr(pipeline, name)()
    result["total_s"] = round(time.monotonic() - STARTED, 3)
    if args.verify_against:  # after the run, timed apart
        t = time.monotonic()
        result["verify"] = verify(spark, args.root, args.verify_against)
        result["verify_s"] = round(time.monotonic() - t, 3)
    spark.stop()
    print("BENCH_JSON " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
