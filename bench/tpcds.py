"""TPC-DS benchmark: the 99 queries as dbt table models over Parquet sources, plain dbt-spark
against hiveopt, paired rounds (ABBA), threads 1, Spark defaults but ANSI mode (off, as in the other
benchmarks; `--ansi` keeps Spark 4's default, on), feedback off (each hiveopt build
runs what the optimizer wrote). Prints per query the medians and the paired ratio, the rules in
effect, whether the rows are equal, the totals and the per-decision-kind table (fired, won, lost,
net seconds).

The data comes from tpcgen-cli (Parquet, one folder per table), the queries from DuckDB's TPC-DS
extension (the reference substitution of each template), translated to Spark SQL by sqlglot and
read from the schema `tpcds_sf<scale>`. Both are installed by `make bench-tpcds` (the `tpcds`
extra: duckdb pinned to the extension's version).

    .venv/bin/python bench/tpcds.py --scale 1 --rounds 3 --warmup 1

`--control` runs dbt-spark against itself in the same rounds (the hiveopt columns are its second
run; the kinds of decision are those of hiveopt's last build): how far apart two runs of the same
SQL land per query on this machine, the floor under the won / lost counts.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402

PROFILE = """tpcds_bench:
  target: hiveopt
  outputs:
    hiveopt:
      type: hiveopt
      method: session
      schema: tpcds_out
      threads: 1
      optimizer:
        feedback: "off"
    spark:
      type: spark
      method: session
      host: localhost
      schema: tpcds_out
      threads: 1
"""
PROJECT = """name: tpcds_bench
version: "1.0"
config-version: 2
profile: tpcds_bench
model-paths: ["models"]
models:
  tpcds_bench:
    +materialized: table
"""
VARIANTS = {"dbt-spark": "spark", "hiveopt": "hiveopt"}
CONTROL = {"dbt-spark": "spark", "dbt-spark again": "spark"}


def generate(scale: str, folder: str) -> None:
    """TPC-DS at `scale` as Parquet, a folder per table (Spark reads a table's folder), once."""
    if os.path.exists(os.path.join(folder, ".complete")):
        return
    shutil.rmtree(folder, ignore_errors=True)
    cli = os.path.join(os.path.dirname(sys.executable), "tpcgen-cli")
    subprocess.run([cli, "tpcds", "parquet", "-s", scale, "--output-dir", folder], check=True)
    for path in glob.glob(os.path.join(folder, "*.parquet")):
        table = os.path.join(folder, os.path.basename(path)[: -len(".parquet")])
        os.makedirs(table, exist_ok=True)
        os.rename(path, os.path.join(table, "part-0.parquet"))
    open(os.path.join(folder, ".complete"), "w").close()


def queries(schema: str, tables: list[str]) -> dict[str, str]:
    """The 99 queries in Spark SQL, their tables read from `schema` (model name -> SQL)."""
    import duckdb
    import duckdb_extension_tpcds
    import sqlglot
    from sqlglot import exp

    extension = glob.glob(os.path.join(os.path.dirname(duckdb_extension_tpcds.__file__), "extensions", "*", "*"))[0]
    connection = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    connection.execute(f"LOAD '{extension}'")
    out = {}
    for number, text in connection.execute("SELECT query_nr, query FROM tpcds_queries()").fetchall():
        tree = sqlglot.parse_one(text, read="duckdb")
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            if table.name.lower() in tables and table.name.lower() not in ctes and not table.db:
                table.set("db", exp.to_identifier(schema))
        out[f"ds{int(number):02d}"] = tree.sql("spark", pretty=True)
    return out


def write_project(folder: str, models: dict[str, str]) -> None:
    os.makedirs(os.path.join(folder, "models"), exist_ok=True)
    with open(os.path.join(folder, "dbt_project.yml"), "w") as handle:
        handle.write(PROJECT)
    with open(os.path.join(folder, "profiles.yml"), "w") as handle:
        handle.write(PROFILE)
    for name, sql in models.items():
        with open(os.path.join(folder, "models", f"{name}.sql"), "w") as handle:
            handle.write(sql + "\n")


def dbt_run(project: str, target: str, results: str) -> dict[str, float]:
    """`dbt run` of the project by `target`; the seconds of each model."""
    return harness.dbt(["run", "--target", target], os.path.join(results, target), project_dir=project)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="1")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds of both sides first (the JIT)")
    parser.add_argument(
        "--control",
        action="store_true",
        help="no hiveopt: dbt-spark against dbt-spark, the same rounds (how noisy two runs of the same SQL are)",
    )
    parser.add_argument(
        "--ansi",
        action="store_true",
        help="keep Spark 4's default ANSI mode (on); without it the session runs with ANSI off",
    )
    args = parser.parse_args()
    variants = CONTROL if args.control else VARIANTS
    started = time.perf_counter()
    data = os.path.join(harness.REPO, "data", f"tpcds-{args.scale}")
    generate(args.scale, data)
    results = os.path.join(harness.RESULTS, f"tpcds-sf{args.scale}{'-ansi' if args.ansi else ''}")
    project = os.path.join(results, "project")
    schema = f"tpcds_sf{args.scale.replace('.', '_')}"
    tables = sorted(t for t in os.listdir(data) if os.path.isdir(os.path.join(data, t)))
    models = queries(schema, tables)
    write_project(project, models)

    from pyspark.sql import SparkSession

    from dbt.adapters.hiveopt.connections import session_configs

    builder = SparkSession.builder.master("local[2]").appName("hiveopt-tpcds").enableHiveSupport()
    for key, value in {
        **session_configs(os.path.join(results, "spark")),
        "spark.ui.enabled": "false",
        "spark.driver.memory": "6g",
        "spark.sql.ansi.enabled": "true" if args.ansi else "false",
        "spark.sql.codegen.cache.maxEntries": harness.CODEGEN_CACHE_ENTRIES,
    }.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
    for table in tables:
        spark.sql(f"CREATE TABLE IF NOT EXISTS {schema}.{table} USING parquet LOCATION '{data}/{table}'")

    # Setup, not timed: dbt-spark's build warms the JVM; hiveopt's first build gathers the
    # statistics of what it reads (on first read, as a user's first build does).
    dbt_run(project, "spark", results)
    if not args.control:
        dbt_run(project, "hiveopt", results)
    for _ in range(args.warmup):
        for target in variants.values():
            harness.settle(spark)
            dbt_run(project, target, results)
    times: dict[str, dict[str, list[float]]] = {v: {m: [] for m in models} for v in variants}
    answers: dict[str, dict[str, list]] = {}
    for round_ in range(args.rounds):
        for variant in harness.round_order(list(variants), round_):
            harness.settle(spark)
            measured = dbt_run(project, variants[variant], results)
            for model in models:
                times[variant][model].append(measured[model])
            if round_ == 0:  # each side's rows, read after its own run
                answers[variant] = {m: harness.rows(spark, m, "tpcds_out", digits=8) for m in models}
        print(f"round {round_ + 1}/{args.rounds} done", flush=True)
    base, ours = list(variants)
    same = {m: answers[base][m] == answers[ours][m] for m in models}
    records = {m: hiveopt_record(results, m) for m in models}
    if args.control:
        print("\ncontrol: dbt-spark against itself (the hiveopt columns are its second run)")
    report(times, same, records)
    print(f"took {(time.perf_counter() - started) / 60:.1f} min")
    return 0


def hiveopt_record(results: str, model: str) -> dict | None:
    path = os.path.join(results, "hiveopt", "hiveopt", f"{model}.json")
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def report(times: dict, same: dict, records: dict) -> None:
    base, ours = list(times)
    kinds: dict[str, list[tuple[str, float, float, float]]] = {}
    print(f"{'query':6} {'spark s':>8} {'hiveopt s':>9} {'ratio':>6}  equal  rules in effect")
    for model in sorted(times[base]):
        a, b = times[base][model], times[ours][model]
        ratio = statistics.median(x / y for x, y in zip(a, b))
        fired = harness.decision_kinds(records.get(model))
        for kind in [*fired, "(any rule fired)" if fired else "(no rule fired)"]:
            kinds.setdefault(kind, []).append((model, statistics.median(a), statistics.median(b), ratio))
        fired_text = ", ".join(fired) or "-"
        print(
            f"{model:6} {statistics.median(a):8.2f} {statistics.median(b):9.2f} {ratio:5.2f}x  "
            f"{'yes' if same[model] else 'NO':5}  {fired_text}"
        )
    rounds = len(next(iter(times[base].values())))
    totals = [
        (sum(times[base][m][r] for m in times[base]), sum(times[ours][m][r] for m in times[base]))
        for r in range(rounds)
    ]
    per_round = ", ".join(f"{a / b:.3f}" for a, b in totals)
    print(
        f"\nratio = dbt-spark / hiveopt, paired per round (median of {rounds}); >1: hiveopt faster\n"
        f"round totals: dbt-spark {', '.join(f'{a:.1f}' for a, _ in totals)} s, "
        f"hiveopt {', '.join(f'{b:.1f}' for _, b in totals)} s; paired {per_round}; "
        f"rows equal {sum(same.values())} of {len(same)}\n"
    )
    print(f"{'kind of decision':38} {'fired':>5} {'won':>4} {'lost':>4} {'net s':>7}")
    for kind, entries in sorted(kinds.items(), key=lambda kv: (kv[0].startswith("("), kv[0])):
        won = sum(r > 1.05 for *_, r in entries)
        lost = sum(r < 0.95 for *_, r in entries)
        net = sum(a - b for _, a, b, _ in entries)
        print(f"{kind:38} {len(entries):5} {won:4} {lost:4} {net:7.2f}")
    print("won: paired ratio > 1.05, lost: < 0.95; net: seconds saved, dbt-spark - hiveopt (medians)")


if __name__ == "__main__":
    sys.exit(main())
