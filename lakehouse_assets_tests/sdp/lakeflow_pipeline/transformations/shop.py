"""A Databricks Lakeflow pipeline as written there: ``import dlt``, expectations, a backfill
(``once=True``), a Delta sink, a view, ``apply_changes`` into SCD type 2 (from a table, and from a view over raw files), and a ``@dlt.table`` over a
batch query (a materialized view)."""

import dlt
from pyspark.sql import functions as F

LANDING = spark.conf.get("shop.landing")  # noqa: F821 - the pipeline provides `spark`


@dlt.table(comment="Orders as they came, without those of no value.")
@dlt.expect_or_drop("valid_amount", "amount > 0")
def orders():
    return (
        spark.readStream.format("json")  # noqa: F821
        .schema("order_id STRING, customer_id STRING, amount DOUBLE")
        .load(f"{LANDING}/orders")
    )


@dlt.append_flow(target="orders", once=True, comment="The old shop's orders, once.")
def old_orders():
    return (
        spark.read.format("json")  # noqa: F821
        .schema("order_id STRING, customer_id STRING, amount DOUBLE")
        .load(f"{LANDING}/history")
    )


# Every order also goes to a Delta table of the warehouse team's, outside the lakehouse.
dlt.create_sink("orders_export", "delta", {"path": spark.conf.get("shop.export")})  # noqa: F821


@dlt.append_flow(target="orders_export")
def export_orders():
    return dlt.read_stream("orders")


@dlt.view
def changes():
    return (
        spark.readStream.format("json")  # noqa: F821
        .schema("customer_id STRING, tier STRING, ts TIMESTAMP")
        .load(f"{LANDING}/crm")
    )


@dlt.table
def customer_changes():
    return dlt.read_stream("changes")


dlt.create_streaming_table("customers")
dlt.apply_changes(
    target="customers", source="customer_changes", keys=["customer_id"], sequence_by="ts", stored_as_scd_type=2
)


@dlt.table(comment="Revenue per customer.")
def revenue():
    return dlt.read("orders").groupBy("customer_id").agg(F.round(F.sum("amount"), 2).alias("revenue"))


# Auto CDC straight from a view over raw files, as Lakeflow writes it: each account's balances
# over time; a DELETE closes the account.
@dlt.view
def payments_raw():
    return (
        spark.readStream.format("json")  # noqa: F821
        .schema("account STRING, balance DOUBLE, seq LONG, op STRING")
        .load(f"{LANDING}/payments")
    )


dlt.create_streaming_table("accounts_history")
dlt.apply_changes(
    target="accounts_history",
    source="payments_raw",
    keys=["account"],
    sequence_by="seq",
    apply_as_deletes="op = 'DELETE'",
    except_column_list=["op"],
    stored_as_scd_type=2,
)
