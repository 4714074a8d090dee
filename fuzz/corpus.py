"""Benchmark queries under random statistics: `python -m fuzz.corpus --suite tpcds --draws 3`.

The generated queries of `python -m fuzz` are small; the queries analysts and benchmarks write are
not. This runs a corpus of real ones, TPC-DS's 99 (DuckDB's reference substitutions, as
bench/tpcds.py has them) or TPC-H's 22 as written and 18 in a bad join order (the example
project's bench models), over a small generated data set (scale 0.01 by default), each optimized
`--draws` times: with the statistics the adapter's own collector gathers from that data, and with
distortions of them (every table scaled by one factor, or each table by its own, heavy hitters
inflated into skew, tables, columns and histograms missing, stale entries) and random config (the
fuzzer's `inputs.random_config`). Whatever the optimizer writes runs on Spark beside the query
as written, and the results must be equal, as `python -m fuzz` checks (`runner.Runner`).

A query whose outermost level has a LIMIT gets its output columns appended to its ORDER BY
(`total_order`): with ties at the cut, two correct plans may keep different rows.

    .venv/bin/python -m fuzz.corpus --suite tpcds --scale 0.01 --draws 3 --seed 1 [--queries ds05,ds17]
    .venv/bin/python -m fuzz.corpus --suite tpch --draws 4

TPC-DS needs the `tpcds` extra (`make bench-tpcds` installs it: duckdb and its TPC-DS extension).
Exit code 1 on any mismatch, optimized-only error, optimizer exception; each failure is printed
and written as JSON to `--out`. `--query Q --draw D` replays one case.

>>> total_order("SELECT a, b FROM t ORDER BY b DESC LIMIT 5", 2)
'SELECT a, b FROM t ORDER BY b DESC, 1, 2 LIMIT 5'
>>> total_order("SELECT a FROM t ORDER BY a", 1)
'SELECT a FROM t ORDER BY a'
"""

from __future__ import annotations

import argparse
import copy
import glob
import os
import random
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from sqlglot import exp, parse_one

import fuzz
from fuzz import inputs
from fuzz.minimize import record, report
from fuzz.queries import Query
from fuzz.runner import Case, Runner, Summary, drawn_case, query_keys, write_finding
from fuzz.session import local_session
from fuzz.tables import Column

REPO = fuzz.REPO
BENCH = os.path.join(REPO, "bench")
TPCH_MODELS = os.path.join(REPO, "integration_tests", "models", "bench", "tpch")
SOURCE = re.compile(r"\{\{\s*source\(\s*'tpch'\s*,\s*'(\w+)'\s*\)\s*\}\}")


def total_order(sql: str, columns: int) -> str:
    """`sql` with its outermost ORDER BY extended by every output position (1..columns) when that
    level has a LIMIT: the rows a LIMIT keeps no longer depend on how ties are met."""
    tree = parse_one(sql, read="spark")
    if not tree.args.get("limit"):
        return sql
    order = tree.args.get("order") or exp.Order(expressions=[])
    order.set(
        "expressions",
        [
            *order.expressions,
            *(exp.Ordered(this=exp.Literal.number(i), nulls_first=True) for i in range(1, columns + 1)),
        ],
    )
    tree.set("order", order)
    return tree.sql("spark")


# -- the suites ------------------------------------------------------------------------------------
def tpcds(scale: str, database: str) -> tuple[str, dict[str, str]]:
    """(the data's folder, name -> SQL) of TPC-DS at `scale`."""
    sys.path.insert(0, BENCH)
    import tpcds as bench_tpcds

    folder = os.path.join(REPO, "data", f"tpcds-{scale}")
    bench_tpcds.generate(scale, folder)
    tables = sorted(t for t in os.listdir(folder) if os.path.isdir(os.path.join(folder, t)))
    return folder, bench_tpcds.queries(database, tables)


def tpch(scale: str, database: str) -> tuple[str, dict[str, str]]:
    """(the data's folder, name -> SQL) of TPC-H at `scale`: the example project's bench models,
    their sources read from `database`."""
    folder = os.path.join(REPO, "data", f"tpch-{scale}")
    script = os.path.join(REPO, "integration_tests", "scripts", "generate_tpch.sh")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    subprocess.run(["bash", script, scale, folder], check=True, env=env, stdout=subprocess.DEVNULL)
    out = {}
    for path in sorted(glob.glob(os.path.join(TPCH_MODELS, "q*.sql"))):
        with open(path) as handle:
            text = SOURCE.sub(lambda m: f"{database}.{m.group(1)}", handle.read())
        if "{{" not in text and "{%" not in text:
            out[os.path.basename(path)[:-4]] = text
    return folder, out


SUITES = {"tpcds": tpcds, "tpch": tpch}
# Spark's error when a broadcast does not fit the driver (run): the case runs again alone.
OUT_OF_MEMORY = "Not enough memory to build and broadcast"
# Tables partitioned by a key their dimension joins on, with a filter on that dimension in some
# queries: where the partition pruning rule can fetch the small side's keys. Few values each
# (TPC-DS's stores and warehouses, TPC-H's 25 nations), NULLs among store_sales' store keys.
PARTITIONED = {
    "tpcds": {"store_sales": "ss_store_sk", "inventory": "inv_warehouse_sk"},
    "tpch": {"supplier": "s_nationkey", "customer": "c_nationkey"},
}


@dataclass
class CorpusData:
    """The corpus's tables as the fuzzer's runner and config drawer take them (FuzzData's shape):
    a column is a join column (it has a domain) when some query of the corpus uses it as a key."""

    database: str
    columns: dict[str, dict[str, str]]  # table -> column -> Spark type
    keys: dict[str, set[str]]  # table -> key columns
    statistics: dict[str, dict[str, Any]] = field(default_factory=dict)  # db.table -> gathered, as dicts
    partitioned: dict[str, str] = field(default_factory=dict)  # table -> its partition column

    @cached_property  # keys are known when the data is made (run)
    def tables(self) -> dict[str, list[Column]]:
        return {
            t: [Column(c, type_, "key" if c in self.keys.get(t, ()) else None) for c, type_ in cols.items()]
            for t, cols in self.columns.items()
        }

    @property
    def skew_pool(self) -> tuple[str, ...]:
        return tuple(sorted(t for t in self.columns if self.keys.get(t)))

    def schema(self) -> dict[str, dict[str, dict[str, str]]]:
        return {self.database: self.columns}

    def partitioning(self) -> dict[str, list[str]]:
        return {f"{self.database}.{t}": [c] for t, c in self.partitioned.items()}

    def column(self, table: str, name: str) -> Column:
        return next(c for c in self.tables[table] if c.name == name)

    def values(self, table: str, column: str) -> list[Any]:
        """What the statistics know of the column's values: its heavy hitters, else min and max."""
        stats = (self.statistics.get(f"{self.database}.{table}") or {}).get("columns", {}).get(column) or {}
        hitters = [v for v, _ in stats.get("heavy_hitters") or [] if v is not None]
        return hitters or [v for v in (stats.get("min"), stats.get("max")) if v is not None]


def register(spark, folder: str, database: str, partitioned: dict[str, str]) -> dict[str, dict[str, str]]:
    """Each table folder under `folder` as a Parquet table of `database`, those of `partitioned`
    (table -> column) copied into the warehouse partitioned by that column; their columns."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
    columns = {}
    for path in sorted(glob.glob(os.path.join(folder, "*"))):
        if not os.path.isdir(path):
            continue
        table = os.path.basename(path)
        if table in partitioned:
            spark.sql(
                f"CREATE TABLE IF NOT EXISTS {database}.{table} USING parquet PARTITIONED BY ({partitioned[table]}) "
                f"AS SELECT * FROM parquet.`{path}`"
            )
        else:
            spark.sql(f"CREATE TABLE IF NOT EXISTS {database}.{table} USING parquet LOCATION '{path}'")
        schema = spark.table(f"{database}.{table}").schema
        columns[table] = {f.name.lower(): f.dataType.simpleString() for f in schema.fields}
    return columns


def gather_statistics(spark, data: CorpusData) -> None:
    """The adapter's own statistics pass over every table, key columns detailed."""
    from dbt.adapters.hiveopt.statistics_service import StatisticsService

    service = StatisticsService(
        lambda sql: [tuple(r) for r in spark.sql(sql).collect()], stats_schema="corpus_statistics"
    )
    for table in sorted(data.columns):
        name = f"{data.database}.{table}"
        data.statistics[name] = service.gather(name, key_columns=data.keys.get(table, ())).stats.to_dict()


# -- distorted statistics ----------------------------------------------------------------------------
def _times(estimate: Any, factor: float, cap: float | None = None) -> Any:
    if not isinstance(estimate, dict) or not isinstance(estimate.get("value"), (int, float)):
        return estimate
    value = estimate["value"] * factor
    return {**estimate, "value": round(min(value, cap) if cap is not None else value)}


def distort(rng: random.Random, true: dict[str, dict[str, Any]], keys: dict[str, set[str]]) -> dict[str, Any]:
    """Statistics for one draw: *true* (as gathered), *scaled* (every table by one common factor,
    times a table's own factor of 0.1-10: coherent, so the cost-based rules decide on sizes a real
    warehouse has) or *noisy* (each table its own factor; tables and columns missing, histograms
    dropped, precisions lowered, stale entries, and a key's first heavy hitter inflated to 30-95%
    of the rows: skew that is not in the data)."""
    quality = rng.choices(["true", "scaled", "noisy"], [1, 5, 3])[0]
    common = inputs.log_uniform(rng, 1, 1e5)
    out: dict[str, Any] = {}
    for name, entry in sorted(true.items()):
        if quality == "noisy" and rng.random() < 0.1:
            continue
        factor = {"true": 1.0, "scaled": common * inputs.log_uniform(rng, 0.1, 10)}.get(quality)
        factor = factor or inputs.log_uniform(rng, 0.01, 1e6)
        stats = copy.deepcopy(entry)
        stats["row_count"] = _times(stats.get("row_count"), factor)
        stats["size_bytes"] = _times(stats.get("size_bytes"), factor)
        rows = (stats.get("row_count") or {}).get("value") or 1
        key_columns = keys.get(name, set())
        for column, col in list(stats.get("columns", {}).items()):
            if quality == "noisy" and rng.random() < 0.1:
                del stats["columns"][column]
                continue
            col["ndv"] = _times(col.get("ndv"), factor ** rng.uniform(0, 1), cap=rows)
            col["null_count"] = _times(col.get("null_count"), factor)
            hitters = col.get("heavy_hitters")
            if hitters:
                col["heavy_hitters"] = [[v, round(c * factor)] for v, c in hitters]
                if quality == "noisy" and column in key_columns and rng.random() < 0.3:
                    col["heavy_hitters"][0][1] = round(rows * rng.uniform(0.3, 0.95))
            if quality == "noisy" and col.get("histogram") and rng.random() < 0.2:
                del col["histogram"]
            if quality == "noisy" and rng.random() < 0.1 and isinstance(col.get("ndv"), dict):
                col["ndv"]["precision"] = "estimated"
        if quality == "noisy" and rng.random() < 0.05:
            stats["stale"] = True
        out[name] = stats
    return out


# -- cases -----------------------------------------------------------------------------------------
def make_corpus_case(
    data: CorpusData, seed: int, name: str, sql: str, draw: int, index: int, read: tuple[dict, list]
) -> Case:
    """Draw `draw` of query `name` (replayable alone: its generator's seed names both); `read`:
    the query's key columns and tables (runner.query_keys)."""
    rng = random.Random(f"corpus:{seed}:{name}:{draw}")
    keys, tables = read
    stats = data.statistics if draw == 0 else distort(rng, data.statistics, keys)
    profile, model = inputs.random_config(rng, data, tables, stats, keys)
    if draw == 0:  # the first draw: the gathered statistics and the default config
        profile, model = {}, {}
    query = Query(sql, name, True)
    return drawn_case(rng, seed, index, query, stats, profile, model, 0.5, 0.7, (2, 4, 8))


@dataclass
class CorpusSummary(Summary):
    rerun_alone: int = 0  # cases run again one query at a time (OUT_OF_MEMORY)


def run(
    spark,
    suite: str,
    scale: str,
    draws: int,
    seed: int,
    names: list[str] | None = None,
    only_draw: int | None = None,
    on_outcome=None,
) -> CorpusSummary:
    """Every chosen query of the suite (`names`; None: all), `draws` cases each (`only_draw`: that
    one), run on `spark`; `on_outcome(outcome)` after each case."""
    database = f"corpus_{suite}"
    folder, corpus = SUITES[suite](scale, database)
    columns = register(spark, folder, database, PARTITIONED[suite])
    read = {name: query_keys(sql, {database: columns}) for name, sql in corpus.items()}  # parsed once
    keys: dict[str, set[str]] = {}
    for query_read in read.values():
        for table, cols in query_read[0].items():
            keys.setdefault(table.split(".")[-1], set()).update(cols)
    data = CorpusData(database, columns, keys, partitioned=PARTITIONED[suite])
    runner = Runner(spark, data, codegen=True)  # first: it quiets PySpark's error logging
    alone = Runner(spark, data, codegen=True, parallel=False)
    summary = CorpusSummary()
    started = time.perf_counter()
    try:
        gather_statistics(spark, data)
        for position, name in enumerate(names or sorted(corpus)):
            sql = total_order(corpus[name], len(spark.sql(corpus[name]).columns))
            for draw in [only_draw] if only_draw is not None else range(draws):
                case = make_corpus_case(data, seed, name, sql, draw, position * draws + draw, read[name])
                outcome = runner.run_case(case)
                if OUT_OF_MEMORY in (outcome.error or ""):
                    # Spark broadcasts customer_demographics by itself (1.9M rows, under its line
                    # on disk); two such queries side by side can run the driver out of memory.
                    # Whichever side it hit, the case runs again one query at a time.
                    summary.rerun_alone += 1
                    outcome = alone.run_case(case)
                summary.add(outcome)
                if on_outcome is not None:
                    on_outcome(outcome)
    finally:
        summary.seconds = time.perf_counter() - started
        alone.close()
        runner.close()
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.corpus", description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=sorted(SUITES), default="tpcds")
    parser.add_argument("--scale", default="0.01")
    parser.add_argument(
        "--draws", type=int, default=3, help="statistics and config per query; the first is as gathered"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--queries", default="", help="comma-separated names (default: all)")
    parser.add_argument("--query", default=None, help="with --draw: replay one case and print it")
    parser.add_argument("--draw", type=int, default=None)
    parser.add_argument("--out", default="fuzz-findings")
    args = parser.parse_args(argv)
    names = [q for q in args.queries.split(",") if q] or ([args.query] if args.query else None)
    written = []

    def show(outcome) -> None:
        case = outcome.case
        draw = case.index % args.draws if args.draw is None else args.draw
        print(
            f"{case.query.shape} draw {draw}: {outcome.kind} ({','.join(outcome.fired) or '-'})"
            + "".join(f" {text}" for text in (outcome.detail, outcome.error) if text),
            flush=True,
        )
        if outcome.failed:
            written.append(write_finding(args.out, record(outcome)))
        if args.query is not None:
            print(report(outcome))

    print(f"optimizer under test: {fuzz.optimizer_origin()}", flush=True)
    # TPC-DS's customer_demographics (1.9M rows at any scale) is under Spark's broadcast line on
    # disk: two queries broadcasting it side by side ran a 2 GB driver out of memory.
    with local_session(driver_memory="4g") as spark:
        # An original that fails on the data (TPC-DS ds12 divides by zero under ANSI at SF 0.01) is
        # an outcome of its own; Spark's executor would log each failed task's stack trace too.
        spark.sparkContext.setLogLevel("OFF")
        summary = run(spark, args.suite, args.scale, args.draws, args.seed, names, args.draw, show)
    print("=" * 100)
    print(f"corpus run: {args.suite} SF {args.scale}, {summary.queries} cases, {args.draws} draws, seed {args.seed}")
    for line in summary.lines():
        if not line.startswith(("shapes:", "WARNING")):  # the corpus's rule mix is the corpus's
            print(line)
    print(f"cases run again one query at a time (a broadcast out of memory): {summary.rerun_alone}")
    if written:
        print(f"findings written: {', '.join(written)}")
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
