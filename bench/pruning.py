"""Partition-pruning benchmark: the bench_prune_* models on generated data (a 30M-row fact written
sorted by customer_id, the same fact partitioned by store_id, dimensions of several sizes), run
by plain dbt-spark, hiveopt with prune_partitions_from_small_side off, hiveopt, and hiveopt without
the value fetch (`prune_fetch_values: false`, what a Thrift or Connect connection gets: semi-join
filters where they win), in the same process and warm SparkSession, alternating, medians of N
rounds. Seconds are dbt's own model timings (run_results.json); hiveopt's include its statistics
I/O and the small-side value fetch.

    .venv/bin/python bench/pruning.py [--rows 30000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

MODELS = [
    "bench_prune_sorted_small",
    "bench_prune_sorted_range",
    "bench_prune_sorted_aggregated",
    "bench_prune_unsorted_aggregated",
    "bench_prune_part_broadcast",
    "bench_prune_part_semi",
    "bench_prune_part_aggregated",
]
NO_FETCH = "hiveopt no fetch"
VARIANTS = {
    "dbt-spark": ("spark", {}),
    "hiveopt rule off": ("session", {"bench_rule": False}),
    "hiveopt": ("session", {"bench_rule": True}),
    NO_FETCH: ("session", {"bench_rule": True, "bench_fetch": False}),
}
RULE = "prune_partitions_from_small_side"
DATA = os.path.join(harness.REPO, "data", "pruning-bench")
SCHEMA = "pruning_bench"
CUSTOMERS = 1_000_000
STORES = 200
STAFF = 20_000_000
ROW_GROUP_BYTES = 4 * 1024 * 1024  # small row groups: the reader can skip at a finer grain


def generate(spark, rows: int) -> None:
    """Write the tables once (a `.complete` marker per scale) and register them in the metastore."""
    from pyspark.sql import functions as F

    folder = os.path.join(DATA, f"rows-{rows}")
    if not os.path.exists(os.path.join(folder, ".complete")):
        print(f"generating {rows} fact rows into {folder}", flush=True)
        fact = spark.range(rows).select(
            ((F.col("id") * 7919) % CUSTOMERS + 1).cast("int").alias("customer_id"),
            ((F.col("id") * 104729) % STORES + 1).cast("int").alias("store_id"),
            (F.col("id") % 730 + 1).cast("int").alias("day"),
            ((F.col("id") % 100_003) / 100.0).alias("amount"),
            (F.col("id") % 13).cast("int").alias("qty"),
        )
        (
            fact.repartitionByRange(16, "customer_id")
            .sortWithinPartitions("customer_id")
            .write.option("parquet.block.size", ROW_GROUP_BYTES)
            .mode("overwrite")
            .parquet(os.path.join(folder, "sales_sorted"))
        )
        (
            fact.repartition("store_id")
            .write.partitionBy("store_id")
            .mode("overwrite")
            .parquet(os.path.join(folder, "sales_by_store"))
        )
        # 5000 VIP customers in one id range; 900 of them gold.
        spark.range(5000).select(
            (F.col("id") + 500_001).cast("int").alias("customer_id"),
            F.when(F.col("id") < 900, "gold").otherwise("silver").alias("tier"),
        ).write.mode("overwrite").parquet(os.path.join(folder, "vip"))
        # Cohorts are ranges of 20,000 ids; the name makes the table too big to broadcast.
        spark.range(CUSTOMERS).select(
            (F.col("id") + 1).cast("int").alias("customer_id"),
            F.format_string("k%02d", (F.col("id") / 20_000).cast("int")).alias("cohort"),
            F.concat(F.lit("s"), (F.col("id") % 5).cast("string")).alias("segment"),
            F.sha2(F.col("id").cast("string"), 256).alias("name"),
        ).write.mode("overwrite").parquet(os.path.join(folder, "customers"))
        spark.range(STORES).select(
            (F.col("id") + 1).cast("int").alias("store_id"),
            F.concat(F.lit("r"), (F.col("id") % 10).cast("string")).alias("region"),
        ).write.mode("overwrite").parquet(os.path.join(folder, "stores"))
        # 100,000 staff rows per store; a country holds 10 stores.
        spark.range(STAFF).select(
            (F.col("id") % STORES + 1).cast("int").alias("store_id"),
            F.format_string("c%02d", (F.col("id") % STORES % 20).cast("int")).alias("country"),
            F.col("id").alias("staff_id"),
        ).write.mode("overwrite").parquet(os.path.join(folder, "store_staff"))
        open(os.path.join(folder, ".complete"), "w").close()
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    for table in ("sales_sorted", "sales_by_store", "vip", "customers", "stores", "store_staff"):
        location = os.path.join(folder, table)
        current = [r for r in spark.sql(f"SHOW TABLES IN {SCHEMA}").collect() if r.tableName == table]
        if (
            current
            and spark.sql(f"DESCRIBE TABLE EXTENDED {SCHEMA}.{table}")
            .filter(f"col_name = 'Location' and data_type like '%{location}'")
            .count()
        ):
            continue
        spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{table}")
        spark.sql(f"CREATE TABLE {SCHEMA}.{table} USING parquet LOCATION '{location}'")
        if table == "sales_by_store":
            spark.sql(f"MSCK REPAIR TABLE {SCHEMA}.{table}")


def _decision(variant: str, model: str):
    """(fired: kind, fetch seconds, reason) of the rule's decisive record for one variant's build."""
    rec = harness.record(variant, model)
    (run,) = [r for r in rec["rules"] if r["rule"] == RULE]
    fired = [d for d in run["decisions"] if d["fired"]]
    chosen = (
        fired
        or [d for d in run["decisions"] if d.get("big_table", "").startswith(SCHEMA + ".sales")]
        or run["decisions"]
    )
    reason = chosen[0]["reason"] if chosen else "-"
    if not fired:
        return "not fired", 0.0, reason
    kind = (
        "semi join"
        if "semi-join filter" in reason
        else "range"
        if "range" in reason
        else "IN-list"
        if "IN-list" in reason
        else "fired"
    )
    return f"FIRED {kind}", sum(d.get("fetch_seconds", 0) for d in fired), reason


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=30_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spark, common = harness.prepare("0.1")
    generate(spark, args.rows)
    print("warm-up: hiveopt gathers the sources' statistics on first read", flush=True)
    harness.dbt(
        ["run", "--select", *MODELS, "--target", "session", "--vars", json.dumps(common)],
        os.path.join(harness.RESULTS, "setup"),
    )
    med, same = harness.measure(spark, MODELS, MODELS, VARIANTS, common, args.rounds)
    print()
    header = (
        f"{'model':32} {'dbt-spark':>9} {'rule off':>9} {'hiveopt':>9} {'ratio':>7} {'rule':>6} "
        f"{'no fetch':>9} {'ratio':>7}  {'same':5} {'fetch s':>7}  decision (hiveopt / no fetch)"
    )
    print(header)
    print("-" * len(header))
    for model in MODELS:
        decisions = [_decision(variant, model) for variant in ("hiveopt", NO_FETCH)]
        spark_s, off, hive, nofetch = (med[v][model] for v in ("dbt-spark", "hiveopt rule off", "hiveopt", NO_FETCH))
        print(
            f"{model:32} {spark_s:9.2f} {off:9.2f} {hive:9.2f} {spark_s / hive:6.2f}x {off / hive:5.2f}x "
            f"{nofetch:9.2f} {spark_s / nofetch:6.2f}x  {str(all(s[model] for s in same.values())):5} "
            f"{decisions[0][1]:7.2f}  {decisions[0][0]} / {decisions[1][0]}"
        )
    print(
        f"\nseconds: median of {args.rounds} model timings from dbt's run_results.json (hiveopt's include its "
        "statistics I/O and the value fetch shown as 'fetch s'); ratio = dbt-spark / hiveopt (and / hiveopt without "
        "the fetch); rule = hiveopt with the rule off / hiveopt; same = every variant returned the same rows"
    )
    print("\ndecisions:")
    for model in MODELS:
        for variant in ("hiveopt", NO_FETCH):
            print(f"  {model} ({variant}): {_decision(variant, model)[2]}")
    with open(os.path.join(harness.RESULTS, "pruning_decisions.json"), "w") as handle:
        json.dump(
            {variant: {m: harness.record(variant, m) for m in MODELS} for variant in ("hiveopt", NO_FETCH)},
            handle,
            indent=2,
            default=str,
        )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
