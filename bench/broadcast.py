"""Broadcast benchmark: the example project's bench models on TPC-H, run by plain dbt-spark and
by hiveopt (rule off, rule on) in the same process and the same warm SparkSession, alternating,
medians of N rounds. Prints per model: seconds per variant (dbt's own model timing from
run_results.json, which for hiveopt includes its statistics I/O and after-build gathering), the
ratio against dbt-spark, whether the rule fired, and whether all variants returned the same rows.

    .venv/bin/python bench/broadcast.py [--scale 1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
EXAMPLE = os.path.join(REPO, "integration_tests")
MODELS = ["bench_month_orders", "bench_segment_customers", "bench_unfiltered_orders"]
VARIANTS = {  # name -> (dbt target, vars)
    "dbt-spark": ("spark", {}),
    "hiveopt rule off": ("session", {"bench_rule": False}),
    "hiveopt": ("session", {"bench_rule": True}),
}


def start_spark(folder: str):
    from pyspark.sql import SparkSession

    from dbt.adapters.hiveopt.connections import session_configs

    builder = SparkSession.builder.master("local[2]").appName("hiveopt-bench").enableHiveSupport()
    for key, value in {**session_configs(folder), "spark.ui.enabled": "false", "spark.driver.memory": "6g",
                       "spark.sql.ansi.enabled": "false"}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def dbt(args, target_path):
    from dbt.cli.main import dbtRunner

    result = dbtRunner().invoke([*args, "--project-dir", EXAMPLE, "--profiles-dir", EXAMPLE,
                                 "--target-path", target_path, "--log-path", os.path.join(target_path, "logs"), "--quiet"])
    if not result.success:
        raise SystemExit(f"dbt {' '.join(args)} failed")
    with open(os.path.join(target_path, "run_results.json")) as handle:
        return {r["unique_id"].split(".")[-1]: r["execution_time"] for r in json.load(handle)["results"]}


def rows(spark, model):
    return sorted(tuple(round(v, 4) if isinstance(v, float) else v for v in r)
                  for r in spark.table(f"analytics_bench.{model}").collect())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="1")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    data = os.path.join(REPO, "data", f"tpch-{args.scale}")
    subprocess.run(["bash", os.path.join(EXAMPLE, "scripts", "generate_tpch.sh"), args.scale, data], check=True,
                   env={**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]})
    os.environ["HIVEOPT_TPCH_DIR"] = data
    results_dir = os.path.join(REPO, "bench", "results")
    spark = start_spark(os.path.join(results_dir, f"spark-sf{args.scale}"))
    common = {"bench": True, "tpch_schema": f"tpch_sf{str(args.scale).replace('.', '_')}"}

    print(f"TPC-H SF {args.scale}: building staging tables once (hiveopt gathers their statistics)")
    dbt(["run", "--select", "staging", "--target", "session", "--vars", json.dumps(common)], os.path.join(results_dir, "setup"))

    times = {v: {m: [] for m in MODELS} for v in VARIANTS}
    answers = {v: {} for v in VARIANTS}
    order = list(VARIANTS)
    for round_ in range(args.rounds):
        for variant in (order if round_ % 2 == 0 else order[::-1]):
            target, extra = VARIANTS[variant]
            target_path = os.path.join(results_dir, variant.replace(" ", "_"))
            measured = dbt(["run", "--select", "bench", "--target", target, "--vars", json.dumps({**common, **extra})], target_path)
            for model in MODELS:
                times[variant][model].append(measured[model])
                answers[variant][model] = rows(spark, model)
        print(f"round {round_ + 1}/{args.rounds} done")

    fired = {}
    for model in MODELS:
        with open(os.path.join(results_dir, "hiveopt", "hiveopt", f"{model}.json")) as handle:
            record = json.load(handle)
        hints = [d.get("hint") + "(" + d.get("relation") + ")" for r in record["rules"] for d in r["decisions"] if d["fired"]]
        gather = sum(v["gather_seconds"] for v in (record.get("after_build_statistics") or {}).values())
        fired[model] = (", ".join(hints) or "no", record["optimizer_ms"], gather)

    print()
    header = f"{'model':26} {'dbt-spark':>10} {'rule off':>10} {'hiveopt':>10} {'ratio':>7}  {'same rows':9} {'opt ms':>7} {'gather s':>8}  rule fired"
    print(header)
    print("-" * len(header))
    for model in MODELS:
        med = {v: statistics.median(times[v][model]) for v in VARIANTS}
        same = all(answers[v][model] == answers["dbt-spark"][model] for v in VARIANTS)
        hint, opt_ms, gather = fired[model]
        print(f"{model:26} {med['dbt-spark']:10.2f} {med['hiveopt rule off']:10.2f} {med['hiveopt']:10.2f} "
              f"{med['dbt-spark'] / med['hiveopt']:6.2f}x  {str(same):9} {opt_ms:7.1f} {gather:8.2f}  {hint}")
    print(f"\nseconds: median of {args.rounds} model timings from dbt's run_results.json (hiveopt's include its "
          "statistics I/O and the after-build gathering shown as 'gather s'); ratio = dbt-spark / hiveopt")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
