"""Skew-join benchmark: a 10M-row fact whose hottest key holds 90%, 50% or 10% of the rows, joined
to a 2M-row dimension too big to broadcast, run by plain dbt-spark (AQE on, Spark's defaults) and
by hiveopt in the same process and warm SparkSession, alternating, medians of N rounds. Prints
per model the seconds of each, the ratio, whether rewrite_skew_joins fired (and why, when not),
and whether both returned the same rows.

    .venv/bin/python bench/skew_join.py [--rows 10000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

SHARES = {"fact_90": 0.9, "fact_50": 0.5, "fact_10": 0.1}
MODELS = ["skew_90", "skew_50", "skew_10", "skew_left_90"]
VARIANTS = {"dbt-spark": ("spark", {}), "hiveopt": ("session", {})}
DIM_ROWS = 2_000_000


def generate(spark, rows: int) -> None:
    """The facts (hot key 0, the rest spread over the dimension's keys, 1% NULL keys) and the
    dimension, as Parquet tables in skew_bench; made once per row count."""
    spark.sql("CREATE DATABASE IF NOT EXISTS skew_bench")
    existing = {t.name for t in spark.catalog.listTables("skew_bench")}
    marker = f"rows={rows}"
    for table, share in SHARES.items():
        if table in existing:
            properties = dict((r[0], r[1]) for r in spark.sql(f"SHOW TBLPROPERTIES skew_bench.{table}").collect())
            if properties.get("hiveopt.bench") == marker:
                continue
        spark.sql(f"DROP TABLE IF EXISTS skew_bench.{table}")
        spark.sql(f"""
            CREATE TABLE skew_bench.{table} USING parquet TBLPROPERTIES ('hiveopt.bench' = '{marker}') AS
            SELECT CASE WHEN id % 100 = 99 THEN NULL
                        WHEN rand(1) < {share} THEN 0
                        ELSE CAST(rand(2) * {DIM_ROWS} AS BIGINT) + 1 END AS k,
                   rand(3) * 100 AS v
            FROM range({rows})""")
    if "dim" not in existing:
        spark.sql(f"""
            CREATE TABLE skew_bench.dim USING parquet AS
            SELECT id AS k, id % 100 AS grp, rand(4) AS w, concat('customer-', id) AS name
            FROM range(0, {DIM_ROWS + 1})""")


def decision(model: str) -> str:
    rec = harness.record("hiveopt", model)
    for run in rec["rules"]:
        if run["rule"] == "rewrite_skew_joins":
            fired = [d for d in run["decisions"] if d["fired"]]
            if fired:
                return f"yes: {fired[0]['reason']}"
            return "no: " + "; ".join(d["reason"] for d in run["decisions"])[:140]
    return "no: " + str(rec.get("fallback_reason"))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spark, common = harness.prepare("1")
    generate(spark, args.rows)
    print(f"facts of {args.rows} rows, dimension of {DIM_ROWS}: one untimed hiveopt run gathers their statistics")
    harness.dbt(
        ["run", "--select", *MODELS, "--target", "session", "--vars", json.dumps(common)],
        os.path.join(harness.RESULTS, "setup"),
    )
    med, same = harness.measure(spark, MODELS, MODELS, VARIANTS, common, args.rounds)
    print()
    header = f"{'model':14} {'dbt-spark':>10} {'hiveopt':>8} {'ratio':>6}  {'same rows':9}  rewrite_skew_joins fired"
    print(header)
    print("-" * len(header))
    for model in MODELS:
        s, h = med["dbt-spark"][model], med["hiveopt"][model]
        print(f"{model:14} {s:10.2f} {h:8.2f} {s / h:5.2f}x  {str(same['hiveopt'][model]):9}  {decision(model)}")
    print(
        f"\nseconds: median of {args.rounds} model timings from dbt's run_results.json (hiveopt's include its "
        "statistics I/O); ratio = dbt-spark / hiveopt. Targets: >= 1.5x at 90%; >= 0.95x where the rule does not fire"
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
