"""Calibration: each kind of decision the optimizer takes, timed on this Spark against its
alternatives, next to the optimizer's own estimates. From the figures: the bytes a broadcast
relation takes in Spark's memory against the estimator's width, where a hint beats what Spark does
alone (AQE on), and the smallest estimated gain per decision kind below which the query is best run
as written. docs/calibration.md keeps the last tables; re-run it when the cost model changes.

    .venv/bin/python bench/calibrate.py [--parts PART,...] [--runs 3]

Parts (each prints one table; all of them by default):
- joins: a 4M-row fact joined to dimensions of 20k-1M rows, filtered to 1%, 10% or all of their
  rows, narrow or wide: Spark alone against BROADCAST, SHUFFLE_HASH and MERGE hints, and what
  select_join_algorithms chooses;
- broadcast_probe: the 400k and 1M-row dimensions filtered to 1% against the fact filtered to
  4,000..4M rows: Spark alone against BROADCAST, by the other side's estimated bytes;
- shuffle_hash: the 400k and 1M-row dimensions (too big to broadcast) against the fact filtered to
  1/16..all of its rows: Spark alone against SHUFFLE_HASH, by how many times bigger the other side
  is (rows, bytes over the columns read, bytes over all columns), and what the rule chose;
- shuffle_hash_keys: the same dimensions against a quarter or all of the fact on a key of one or
  two bigints or strings, broadcasts off: sort-merge against SHUFFLE_HASH on either side;
- reorder: TPC-H SF 1 multi-join queries (as written and in a bad order): the written order against
  reorder_joins' order alone (no hints), with the estimated cost of each; and, where it fires,
  both orders again with select_join_algorithms' hints, which the estimate assumes (it prices a
  relation it estimates under the broadcast threshold as broadcast, hinted or not);
- skew: a 4M-row fact whose hottest key holds 2-90% of the rows against a 500k-row dimension: as
  written against rewrite_skew_joins;
- window: an aggregate joined back to its input (Hive's correlation example) over 4M rows, a table
  and an expensive input: as written against merge_correlated_aggregates;
- exists: TPC-H Q21's EXISTS and NOT EXISTS over the relation itself on its key, the outer block
  and the subqueries filtered to 1-100% of the rows: as written against merge_correlated_aggregates'
  windows, next to its estimate of the bytes the joins shuffle over the window's;
- siblings: 2-8 aggregates of one input with different filters: as written against
  merge_sibling_aggregates.
Every variant's rows are compared with the original's (multisets, floats to 10 digits).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, StatsCatalog, optimize  # noqa: E402
from dbt.adapters.hiveopt.optimizer.relation_estimates import ROW_OVERHEAD_BYTES, column_width  # noqa: E402
from dbt.adapters.hiveopt.statistics_service import StatisticsService  # noqa: E402

DB = "calib"
FACT_ROWS = 4_000_000
KEYS = 1_000_000
DIM_ROWS = (20_000, 100_000, 400_000, 1_000_000)
SHARES = (1, 10, 100)  # percent of a dimension's rows its filter keeps
RULES = (
    "merge_correlated_aggregates",
    "merge_sibling_aggregates",
    "reorder_joins",
    "rewrite_skew_joins",
    "select_join_algorithms",
    "prune_partitions_from_small_side",
)


class Lab:
    """One warm session, the statistics of what it built, and timing."""

    def __init__(self, spark, runs: int):
        self.spark, self.runs = spark, runs
        self.service = StatisticsService(
            lambda sql: [tuple(r) for r in spark.sql(sql).collect()], stats_schema="hiveopt_calib"
        )
        self.statistics = StatsCatalog()
        self.schema: dict[str, dict[str, dict[str, str]]] = {}

    def table(self, name: str, select: str) -> None:
        """Create `name` from `select` once (kept between runs of the script), with statistics."""
        db, table = name.split(".")
        self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
        if not self.spark.catalog.tableExists(name):
            self.spark.sql(f"CREATE TABLE {name} USING parquet AS {select}")
        self.add(name)

    def add(self, name: str) -> None:
        db, table = name.split(".")
        self.statistics.put(name, self.service.ensure(name)[0])
        self.schema.setdefault(db, {})[table] = dict(self.service.describe(name).columns)

    def optimized(self, sql: str, rule: str, *also: str, **settings) -> tuple[str, dict]:
        """The SQL one rule (and the rules `also` names, after it in the pipeline's order) makes of
        `sql` with this lab's statistics, and the fired decisions of `rule`."""
        on = {rule, *also}
        config = OptimizerConfig(rules={r: r in on for r in RULES}, feedback="off", **settings)
        result = optimize(sql, OptimizerContext(schema=self.schema, statistics=self.statistics, config=config))
        decisions = [d for r in result.to_dict()["rules"] if r["rule"] == rule for d in r["decisions"]]
        return result.sql, {"fired": [d for d in decisions if d["fired"]], "all": decisions}

    def seconds(self, sql: str) -> float:
        """Median seconds of `runs` runs (after one untimed run that warms the JIT and file cache)."""
        self.spark.sql(sql).collect()
        times = []
        for _ in range(self.runs):
            started = time.perf_counter()
            self.spark.sql(sql).collect()
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    def variants(self, sql: str, variants: dict[str, str]) -> dict[str, float]:
        """Each variant's median seconds (`seconds`), after checking it returns `sql`'s rows."""
        expected = self.rows(sql)
        times = {}
        for name, query in variants.items():
            assert self.rows(query) == expected, (name, sql)
            times[name] = self.seconds(query)
        return times

    def rows(self, sql: str):
        def value(v):
            return float(f"{float(v):.10g}") if isinstance(v, float) or type(v).__name__ == "Decimal" else v

        return sorted((tuple(value(v) for v in r) for r in self.spark.sql(sql).collect()), key=repr)

    def broadcast_bytes(self, sql: str) -> int | None:
        """The 'data size' Spark's BroadcastExchange reports for `sql`: what the build side
        takes in memory as Spark holds it."""
        description = f"calibrate {time.perf_counter_ns()}"
        context = self.spark.sparkContext
        context.setJobDescription(description)
        try:
            self.spark.sql(sql).collect()
        finally:
            context.setJobDescription(None)
        store = self.spark._jsparkSession.sharedState().statusStore()
        executions = store.executionsList().iterator()
        found = None
        while executions.hasNext():
            execution = executions.next()
            if execution.description() == description:
                found = execution.executionId()
        if found is None:
            return None
        metrics = store.executionMetrics(found)
        nodes = store.planGraph(found).allNodes().iterator()
        while nodes.hasNext():
            node = nodes.next()
            if "BroadcastExchange" not in str(node.name()):
                continue
            for_metric = node.metrics().iterator()
            while for_metric.hasNext():
                metric = for_metric.next()
                if metric.name() == "data size":
                    value = metrics.get(metric.accumulatorId())
                    if value.isDefined():
                        return _bytes(str(value.get()))
        return None


def _bytes(text: str) -> int | None:
    """Spark's size metric text ('12.3 MiB' or 'total (min, med, max ...)\\n12.3 MiB (...)') in bytes."""
    match = re.search(r"([\d.]+)\s*(B|KiB|MiB|GiB)\b", text)
    if not match:
        return None
    return int(float(match.group(1)) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[match.group(2)])


@contextlib.contextmanager
def spark_settings(spark, settings: dict[str, str]):
    """Spark settings for the block, then as they were."""
    kept = {name: spark.conf.get(name, None) for name in settings}
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, value in kept.items():
            if value is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, value)


@contextlib.contextmanager
def threshold_off(module, name: str):
    """A rule's threshold at 0 for the block (the rewrite it declined, to time it), then back."""
    kept = getattr(module, name)
    setattr(module, name, 0.0)
    try:
        yield
    finally:
        setattr(module, name, kept)


def _hinted(sql: str, hint: str, alias: str = "d") -> str:
    return sql.replace("SELECT ", f"SELECT /*+ {hint}({alias}) */ ", 1)


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:.2f}"


# -- joins -----------------------------------------------------------------------------------------
def join_tables(lab: Lab) -> None:
    """The fact and the dimensions (kept between runs of the script), with statistics."""
    lab.table(
        f"{DB}.fact",
        f"SELECT id, CAST(pmod(hash(id), {KEYS}) AS BIGINT) AS k, CAST(id % 1000 AS DOUBLE) AS v "
        f"FROM range({FACT_ROWS})",
    )
    for n in DIM_ROWS:
        lab.table(
            f"{DB}.dim_{n}",
            f"SELECT id AS k, CAST(id % 100 AS INT) AS f, concat('name-', CAST(id AS STRING)) AS s1, "
            f"sha2(CAST(id AS STRING), 256) AS s2 FROM range({n})",
        )


def joins(lab: Lab) -> list[dict]:
    join_tables(lab)
    out = []
    for n in DIM_ROWS:
        for share in SHARES:
            for width, column in (("narrow", "s1"), ("wide", "s2")):
                sql = (
                    f"SELECT COUNT(*) AS n, SUM(f.v) AS v, MAX(d.{column}) AS s FROM {DB}.fact AS f "
                    f"JOIN {DB}.dim_{n} AS d ON f.k = d.k WHERE d.f < {share}"
                )
                chosen, decisions = lab.optimized(sql, "select_join_algorithms")
                detail = (decisions["all"] or [{}])[0]
                row = {
                    "dim_rows": n,
                    "share": share,
                    "width": width,
                    "build_rows": n * share // 100,
                    "estimated_bytes": detail.get("build_bytes"),
                    "hiveopt": detail.get("hint") if detail.get("fired") else "none",
                    "why": detail.get("reason", ""),
                    "memory_bytes": lab.broadcast_bytes(_hinted(sql, "BROADCAST")),
                }
                hints = ("BROADCAST", "SHUFFLE_HASH", "MERGE")
                row.update(lab.variants(sql, {"none": sql, **{h: _hinted(sql, h) for h in hints}}))
                row["hiveopt_s"] = row[row["hiveopt"] if row["hiveopt"] != "none" else "none"]
                out.append(row)
                print(
                    f"  {n:>9,} rows, {share:3}% kept, {width:6}: spark {row['none']:.2f} s, broadcast "
                    f"{row['BROADCAST']:.2f}, shuffle-hash {row['SHUFFLE_HASH']:.2f}, merge {row['MERGE']:.2f}; "
                    f"hiveopt {row['hiveopt']}",
                    flush=True,
                )
    return out


def print_joins(rows: list[dict]) -> None:
    print(
        f"\n{'dim rows':>9} {'kept':>5} {'width':6} {'build rows':>10} {'est MB':>7} {'mem MB':>7} {'mem/est':>7} "
        f"{'spark s':>8} {'BHJ':>6} {'SHJ':>6} {'SMJ':>6} | {'hiveopt':12} {'spark/hiveopt':>13}"
    )
    for r in rows:
        ratio = r["memory_bytes"] / r["estimated_bytes"] if r["memory_bytes"] and r["estimated_bytes"] else None
        print(
            f"{r['dim_rows']:9,} {r['share']:4}% {r['width']:6} {r['build_rows']:10,} {_mb(r['estimated_bytes']):>7} "
            f"{_mb(r['memory_bytes']):>7} {'-' if ratio is None else f'{ratio:.2f}':>7} {r['none']:8.2f} "
            f"{r['BROADCAST']:6.2f} {r['SHUFFLE_HASH']:6.2f} {r['MERGE']:6.2f} | {r['hiveopt']:12} "
            f"{r['none'] / r['hiveopt_s']:13.2f}"
        )


# -- broadcast: the other side's size --------------------------------------------------------------
PROBE_CUTS = (1, 4, 16, 64, 250, 1000)  # the fact's rows the probe side keeps: v < cut, cut/1000 of them


def broadcast_probe(lab: Lab) -> list[dict]:
    """The dimensions Spark does not broadcast by itself (400k and 1M rows) filtered to 1% (a side
    the rule broadcasts) joined to the fact filtered to 4,000..4M rows (by `v`): Spark alone
    against a BROADCAST hint on the dimension, by the other side's estimated bytes. Spark alone
    shuffles both sides and AQE then broadcasts the small one; the hint saves those shuffles. Does
    that still pay when the other side is small too? (It does: docs/calibration.md.)"""
    out = []
    for n in DIM_ROWS[2:]:
        for cut in PROBE_CUTS:
            sql = (
                f"SELECT COUNT(*) AS n, SUM(f.v) AS v, MAX(d.s1) AS s FROM {DB}.fact AS f "
                f"JOIN {DB}.dim_{n} AS d ON f.k = d.k WHERE d.f < 1 AND f.v < {cut}"
            )
            chosen, decisions = lab.optimized(sql, "select_join_algorithms")
            detail = (decisions["all"] or [{}])[0]
            row = {
                "dim_rows": n,
                "probe_rows": FACT_ROWS * cut // 1000,
                "estimated_build_bytes": detail.get("build_bytes"),
                "estimated_probe_bytes": detail.get("probe_bytes"),
                "hiveopt": detail.get("hint") if detail.get("fired") else "none",
                "why": detail.get("reason", ""),
            }
            row.update(lab.variants(sql, {"none": sql, "BROADCAST": _hinted(sql, "BROADCAST")}))
            out.append(row)
            print(
                f"  {n:>9,} rows (1% kept) against {row['probe_rows']:>9,}: spark {row['none']:.2f} s, "
                f"broadcast {row['BROADCAST']:.2f} s; hiveopt {row['hiveopt']}",
                flush=True,
            )
    return out


def print_broadcast_probe(rows: list[dict]) -> None:
    print(
        f"\n{'dim rows':>9} {'build MB':>8} {'probe rows':>10} {'probe MB':>8} {'spark s':>8} {'BHJ':>6} "
        f"{'spark/BHJ':>9} | hiveopt"
    )
    for r in rows:
        print(
            f"{r['dim_rows']:9,} {_mb(r['estimated_build_bytes']):>8} {r['probe_rows']:10,} "
            f"{_mb(r['estimated_probe_bytes']):>8} {r['none']:8.2f} {r['BROADCAST']:6.2f} "
            f"{r['none'] / r['BROADCAST']:9.2f} | {r['hiveopt']}"
        )


# -- shuffle-hash: the other side's size -----------------------------------------------------------
PROBE_SHARES = (0.0625, 0.125, 0.25, 0.5, 1.0)  # of the fact's rows the probe side keeps


def shuffle_hash(lab: Lab) -> list[dict]:
    """Dimensions too big to broadcast (400k and 1M rows, all kept, narrow or wide) joined to the
    fact filtered to 1/16..all of its rows (by `v`): Spark alone against a SHUFFLE_HASH hint on
    either side and against the rule's choice, by how many times bigger than the side the rule
    builds on the other side is, counted three ways (rows; bytes over the columns the block reads
    of it; bytes over all its columns, as select_join_algorithms counts the other side)."""
    out = []
    for n in DIM_ROWS[2:]:
        for width, column in (("narrow", "s1"), ("wide", "s2")):
            for share in PROBE_SHARES:
                sql = (
                    f"SELECT COUNT(*) AS n, SUM(f.v) AS v, MAX(d.{column}) AS s FROM {DB}.fact AS f "
                    f"JOIN {DB}.dim_{n} AS d ON f.k = d.k WHERE f.v < {1000 * share:g}"
                )
                chosen, decisions = lab.optimized(sql, "select_join_algorithms")
                detail = (decisions["all"] or [{}])[0]
                build_bytes, probe_bytes = detail.get("build_bytes"), detail.get("probe_bytes")
                probe_rows = round(FACT_ROWS * share)
                row = {
                    "dim_rows": n,
                    "width": width,
                    "probe_rows": probe_rows,
                    "estimated_build_bytes": build_bytes,
                    "estimated_probe_bytes": probe_bytes,
                    "estimated_probe_read_bytes": None,
                    "hiveopt": detail.get("hint") if detail.get("fired") else "none",
                    "why": detail.get("reason", ""),
                    "relation": detail.get("relation"),
                }
                # The other side's bytes over the columns the block reads of it, as the build side is counted.
                other = "d" if row["relation"] == "f" else "f"
                reads = {"f": ("k", "v"), "d": ("k", column)}[other]
                table = f"{DB}.fact" if other == "f" else f"{DB}.dim_{n}"
                if probe_bytes:
                    row["estimated_probe_read_bytes"] = probe_bytes * _width(lab, table, reads) / _width(lab, table)
                row.update(
                    lab.variants(
                        sql,
                        {
                            "none": sql,
                            "SHJ(d)": _hinted(sql, "SHUFFLE_HASH", "d"),
                            "SHJ(f)": _hinted(sql, "SHUFFLE_HASH", "f"),
                        },
                    )
                )
                row["hiveopt_s"] = row["none"] if chosen == sql else lab.seconds(chosen)
                out.append(row)
                print(
                    f"  {n:>9,} rows {width:6} against {probe_rows:>9,}: spark {row['none']:.2f} s, SHJ(d) "
                    f"{row['SHJ(d)']:.2f} s, SHJ(f) {row['SHJ(f)']:.2f} s; hiveopt {row['hiveopt']}({row['relation']}) "
                    f"{row['hiveopt_s']:.2f} s",
                    flush=True,
                )
    return out


def _width(lab: Lab, table: str, columns=None) -> float:
    """A row's bytes over `columns` (all: None) as the estimator counts them (column_width, and
    the row overhead), from the table's statistics and types."""
    stats, types = lab.statistics.get(table), lab.schema[DB][table.split(".")[1]]
    names = columns or list(types)
    return ROW_OVERHEAD_BYTES + sum(column_width(types[c], stats.columns[c].avg_width).value for c in names)


def print_shuffle_hash(rows: list[dict]) -> None:
    def ratio(a, b):
        return f"{a / b:.2f}" if a and b else "-"

    print(
        f"\n{'dim rows':>9} {'width':6} {'probe rows':>10} {'rows x':>6} {'read x':>6} {'all x':>6} "
        f"{'spark s':>8} {'SHJ(d)':>6} {'SHJ(f)':>6} | {'hiveopt':16} {'s':>5} {'spark/hiveopt':>13}"
    )
    for r in rows:
        build = r["estimated_build_bytes"]
        chosen = f"{r['hiveopt']}({r['relation']})" if r["hiveopt"] != "none" else "none"
        print(
            f"{r['dim_rows']:9,} {r['width']:6} {r['probe_rows']:10,} {r['probe_rows'] / r['dim_rows']:6.2f} "
            f"{ratio(r['estimated_probe_read_bytes'], build):>6} {ratio(r['estimated_probe_bytes'], build):>6} "
            f"{r['none']:8.2f} {r['SHJ(d)']:6.2f} {r['SHJ(f)']:6.2f} | {chosen:16} {r['hiveopt_s']:5.2f} "
            f"{r['none'] / r['hiveopt_s']:13.2f}"
        )


# -- shuffle-hash by key ----------------------------------------------------------------------------
KEY_SHAPES = (
    ("1 bigint", ("k",)),
    ("2 bigints", ("k1", "k2")),  # k1 has 10,000 values, k2 100: the pair is k, as TPC-H's (suppkey, partkey)
    ("1 string", ("ks",)),
    ("2 strings", ("ks1", "ks2")),
)


def key_tables(lab: Lab) -> None:
    """The fact and the 400k and 1M-row dimensions again, their key as one bigint, two bigints,
    one string and two strings (the same pairs of rows join under every shape)."""
    parts = "{k} % 10000 AS k1, {k} DIV 10000 AS k2, CAST({k} AS STRING) AS ks, "
    parts += "concat('c-', CAST({k} % 10000 AS STRING)) AS ks1, concat('b-', CAST({k} DIV 10000 AS STRING)) AS ks2"
    lab.table(
        f"{DB}.fact_keys",
        f"SELECT id, k, {parts.format(k='k')}, v FROM (SELECT id, CAST(pmod(hash(id), {KEYS}) AS BIGINT) AS k, "
        f"CAST(id % 1000 AS DOUBLE) AS v FROM range({FACT_ROWS}))",
    )
    for n in DIM_ROWS[2:]:
        lab.table(
            f"{DB}.dim_keys_{n}",
            f"SELECT id AS k, {parts.format(k='id')}, concat('name-', CAST(id AS STRING)) AS s1 FROM range({n})",
        )


def shuffle_hash_keys(lab: Lab) -> list[dict]:
    """Sort-merge (broadcasts off) against a SHUFFLE_HASH hint on either side, by the join key's
    columns and type: the 400k and 1M-row dimensions against the fact, a quarter or all of it (the
    rule's choice is not timed: it assumes Spark's broadcasts, which this part turns off). Spark's
    SortExec uses its radix sort for one key of a number or date type only: a sort-merge join on
    two keys or on a string compares rows."""
    key_tables(lab)
    out = []
    # Spark's own broadcasts off: sort-merge is the baseline.
    broadcasts_off = {
        "spark.sql.autoBroadcastJoinThreshold": "-1",
        "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1",
    }
    with spark_settings(lab.spark, broadcasts_off):
        for n in DIM_ROWS[2:]:
            for share in (0.25, 1.0):
                for shape, keys in KEY_SHAPES:
                    on = " AND ".join(f"f.{k} = d.{k}" for k in keys)
                    sql = (
                        f"SELECT COUNT(*) AS n, SUM(f.v) AS v, MAX(d.s1) AS s FROM {DB}.fact_keys AS f "
                        f"JOIN {DB}.dim_keys_{n} AS d ON {on} WHERE f.v < {1000 * share:g}"
                    )
                    row = {"dim_rows": n, "probe_rows": round(FACT_ROWS * share), "key": shape}
                    row.update(
                        lab.variants(
                            sql,
                            {
                                "sort-merge": sql,
                                "SHJ(d)": _hinted(sql, "SHUFFLE_HASH", "d"),
                                "SHJ(f)": _hinted(sql, "SHUFFLE_HASH", "f"),
                            },
                        )
                    )
                    out.append(row)
                    print(
                        f"  {n:>9,} rows against {row['probe_rows']:>9,} on {shape:9}: sort-merge "
                        f"{row['sort-merge']:.2f} s, SHJ(d) {row['SHJ(d)']:.2f} s, SHJ(f) {row['SHJ(f)']:.2f} s",
                        flush=True,
                    )
    return out


def print_shuffle_hash_keys(rows: list[dict]) -> None:
    print(
        f"\n{'dim rows':>9} {'fact rows':>9} {'key':9} {'sort-merge s':>12} {'SHJ(d)':>6} {'SHJ(f)':>6} "
        f"{'SMJ/SHJ(d)':>10} {'SMJ/SHJ(f)':>10}"
    )
    for r in rows:
        print(
            f"{r['dim_rows']:9,} {r['probe_rows']:9,} {r['key']:9} {r['sort-merge']:12.2f} {r['SHJ(d)']:6.2f} "
            f"{r['SHJ(f)']:6.2f} {r['sort-merge'] / r['SHJ(d)']:10.2f} {r['sort-merge'] / r['SHJ(f)']:10.2f}"
        )


# -- reorder ---------------------------------------------------------------------------------------
TPCH_QUERIES = ("q02", "q05", "q07", "q08", "q09", "q10", "q21", "star")


def tpch_sql(model: str, schema: str) -> str:
    """A bench model's SQL with its sources as tables of `schema` and its config() left out."""
    with open(os.path.join(harness.EXAMPLE, "models", "bench", "tpch", f"{model}.sql")) as handle:
        text = handle.read()
    text = re.sub(r"\{\{\s*config\(.*?\)\s*\}\}", "", text, flags=re.S)
    text = re.sub(r"\{\{\s*source\('tpch',\s*'(\w+)'\)\s*\}\}", rf"{schema}.\1", text)
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("--"))


def reorder(lab: Lab, schema: str) -> list[dict]:
    for table in ("customer", "orders", "lineitem", "supplier", "nation", "region", "part", "partsupp"):
        lab.add(f"{schema}.{table}")
    out = []
    for query in TPCH_QUERIES:
        for model in (query, f"{query}_bad"):
            sql = tpch_sql(model, schema)
            chosen, decisions = lab.optimized(sql, "reorder_joins")
            fired = decisions["fired"]
            costs = [
                (float(m.group(1)), float(m.group(2)))
                for d in fired
                for m in [re.search(r"estimated cost ([\d.e+]+) -> ([\d.e+]+)", d["reason"])]
                if m
            ]
            written_cost = sum(c[0] for c in costs)
            chosen_cost = sum(c[1] for c in costs)
            row = {"model": model, "fired": bool(fired), "estimated_gain": written_cost / chosen_cost if costs else 1.0}
            row["written"] = lab.seconds(sql)
            row["reordered"] = lab.seconds(chosen) if fired else row["written"]
            if fired:
                assert lab.rows(chosen) == lab.rows(sql), model
                # The pair the estimate compares: each order with the join hints the cost model
                # counted on (select_join_algorithms on the written order, and after the reorder).
                hinted_written, _ = lab.optimized(sql, "select_join_algorithms")
                hinted_chosen, _ = lab.optimized(sql, "reorder_joins", "select_join_algorithms")
                row["hinted_written"] = lab.seconds(hinted_written)
                row["hinted_reordered"] = lab.seconds(hinted_chosen)
                assert lab.rows(hinted_chosen) == lab.rows(sql), model
            out.append(row)
            hinted = (
                f"; with join hints {row['hinted_written']:.2f} s and {row['hinted_reordered']:.2f} s" if fired else ""
            )
            print(
                f"  {model:9} written {row['written']:.2f} s, reordered {row['reordered']:.2f} s{hinted} "
                f"(estimated gain {row['estimated_gain']:.2f}x)",
                flush=True,
            )
    return out


def print_reorder(rows: list[dict]) -> None:
    print(
        f"\n{'model':10} {'fired':6} {'est. gain':>9} {'written s':>10} {'reordered s':>12} {'measured gain':>14}"
        f" | {'hinted: written s':>17} {'reordered s':>12} {'measured gain':>14}"
    )
    for r in rows:
        hinted = (
            f" | {r['hinted_written']:17.2f} {r['hinted_reordered']:12.2f} "
            f"{r['hinted_written'] / r['hinted_reordered']:13.2f}x"
            if "hinted_written" in r
            else ""
        )
        print(
            f"{r['model']:10} {str(r['fired']):6} {r['estimated_gain']:8.2f}x {r['written']:10.2f} "
            f"{r['reordered']:12.2f} {r['written'] / r['reordered']:13.2f}x{hinted}"
        )


# -- skew ------------------------------------------------------------------------------------------
HOT_SHARES = (2, 5, 10, 25, 50, 90)
# The 90% case again on facts of these sizes: the split pays only once the hot task is long.
SKEW_ROWS = (2_000_000, 8_000_000)


def skew(lab: Lab) -> list[dict]:
    lab.table(
        f"{DB}.skew_dim",
        "SELECT id AS k, concat('name-', CAST(id AS STRING)) AS name FROM range(500000)",
    )
    out = []
    cases = [(hot, FACT_ROWS) for hot in HOT_SHARES] + [(90, rows) for rows in SKEW_ROWS]
    for hot, rows in cases:
        table = f"{DB}.skew_{hot}" if rows == FACT_ROWS else f"{DB}.skew_{hot}_{rows}"
        lab.table(
            table,
            f"SELECT id, IF(pmod(hash(id), 100) < {hot}, 7, CAST(pmod(hash(id, 1), 500000) AS BIGINT)) AS k, "
            f"CAST(id % 100 AS DOUBLE) AS v FROM range({rows})",
        )
        sql = (
            f"SELECT d.name, COUNT(*) AS n, SUM(f.v) AS v FROM {table} AS f JOIN {DB}.skew_dim AS d "
            "ON f.k = d.k GROUP BY d.name"
        )
        chosen, decisions = lab.optimized(sql, "rewrite_skew_joins", task_slots=2)
        fired = decisions["fired"]
        why = (decisions["all"] or [{}])[0].get("reason", "")
        row = {"hot_share": hot, "rows": rows, "fired": bool(fired), "why": why}
        row["estimated_speedup"] = (fired[0].get("speedup") if fired else None) or (
            (decisions["all"] or [{}])[0].get("speedup")
        )
        row["written"] = lab.seconds(sql)
        split = chosen
        if not fired:  # the rule's split, as it would write it, to measure it anyway
            split, _ = lab.optimized(
                sql, "rewrite_skew_joins", task_slots=2, skewed_keys={f"{DB}.skew_{hot}": {"k": [7]}}
            )
        row["split"] = lab.seconds(split)
        assert lab.rows(split) == lab.rows(sql), hot
        out.append(row)
        print(
            f"  hot key {hot:2}% of {rows:,} rows: written {row['written']:.2f} s, split {row['split']:.2f} s; "
            f"rule {'fired' if fired else 'skipped'}",
            flush=True,
        )
    return out


def print_skew(rows: list[dict]) -> None:
    print(
        f"\n{'fact rows':>10} {'hot share':>9} {'fired':6} {'est. speedup':>12} {'written s':>10} {'split s':>8} "
        f"{'measured':>9}"
    )
    for r in rows:
        est = "-" if r["estimated_speedup"] is None else f"{float(r['estimated_speedup']):.2f}x"
        print(
            f"{r['rows']:10,} {r['hot_share']:8}% {str(r['fired']):6} {est:>12} {r['written']:10.2f} {r['split']:8.2f} "
            f"{r['written'] / r['split']:8.2f}x"
        )


# -- window (an aggregate joined back to its input) -------------------------------------------------
WINDOW_KEYS = (1_000, 20_000, 200_000, 2_000_000)


def window(lab: Lab) -> list[dict]:
    inputs = {}
    for keys in WINDOW_KEYS:
        lab.table(
            f"{DB}.t1_{keys}",
            f"SELECT CAST(pmod(hash(id), {keys}) AS BIGINT) AS key, CAST(id % 997 AS DOUBLE) AS value "
            f"FROM range({FACT_ROWS})",
        )
        inputs[f"table, {keys:,} keys"] = f"{DB}.t1_{keys}"
    inputs.update(
        {
            "expensive input (an aggregated join)": (
                f"(SELECT f.k AS key, SUM(f.v) AS value FROM {DB}.fact AS f JOIN {DB}.dim_1000000 AS d ON f.k = d.k "
                "GROUP BY f.id, f.k)"
            ),
        }
    )
    out = []
    for label, source in inputs.items():
        sql = (
            f"WITH t AS (SELECT * FROM {source} AS s) SELECT tmp1.key, COUNT(*) AS n FROM "
            "(SELECT key, AVG(value) AS avg_value FROM t GROUP BY key) AS tmp1 JOIN t ON tmp1.key = t.key "
            "WHERE t.value > tmp1.avg_value GROUP BY tmp1.key"
        )
        chosen, decisions = lab.optimized(sql, "merge_correlated_aggregates")
        fired = decisions["fired"]
        why = (fired or decisions["all"] or [{}])[0].get("reason", "")
        rewritten = chosen
        if not fired:  # measure the window anyway: the cost model's threshold off
            from dbt.adapters.hiveopt.optimizer import cost_model

            with threshold_off(cost_model, "MIN_RECOMPUTE_TO_WINDOW_RATIO"):
                rewritten, _ = lab.optimized(sql, "merge_correlated_aggregates")
        row = {"input": label, "fired": bool(fired), "why": why}
        row["written"] = lab.seconds(sql)
        row["window"] = lab.seconds(rewritten) if rewritten != sql else row["written"]
        assert lab.rows(rewritten) == lab.rows(sql), label
        out.append(row)
        print(
            f"  {label}: written {row['written']:.2f} s, window {row['window']:.2f} s; fired {bool(fired)}", flush=True
        )
    return out


def print_window(rows: list[dict]) -> None:
    print(f"\n{'input':38} {'fired':6} {'written s':>10} {'window s':>9} {'measured':>9}")
    for r in rows:
        print(
            f"{r['input']:38} {str(r['fired']):6} {r['written']:10.2f} {r['window']:9.2f} "
            f"{r['written'] / r['window']:8.2f}x"
        )


# -- exists (EXISTS and NOT EXISTS over the relation itself, TPC-H Q21's shape) ----------------------
EXISTS_SHARES = ((100, 100), (10, 100), (1, 100), (100, 1), (10, 1), (1, 1))  # (outer, subquery) percent


def exists(lab: Lab) -> list[dict]:
    """TPC-H Q21's shape over a 4M-row table (about 4 rows per key, 5 values of s): the outer block
    and the NOT EXISTS keep a share of the rows by their own filters, the EXISTS reads them all; and
    a lone EXISTS whose rows are filtered. As written against the windows (forced with the rule's
    ratio at 0 where it declined), with the rule's estimate of the joins' bytes over the window's."""
    from dbt.adapters.hiveopt.optimizer import correlated_exists

    lab.table(
        f"{DB}.e",
        f"SELECT CAST(pmod(hash(id), {KEYS}) AS BIGINT) AS k, CAST(pmod(hash(id, 7), 5) AS BIGINT) AS s, "
        f"CAST(pmod(hash(id, 3), 100) AS INT) AS f, CAST(pmod(hash(id, 5), 100) AS INT) AS g FROM range({FACT_ROWS})",
    )
    queries = {}
    for outer, sub in EXISTS_SHARES:
        queries[f"Q21 shape, outer {outer}%, NOT EXISTS {sub}%"] = (
            f"SELECT o.s, COUNT(*) AS n FROM {DB}.e AS o WHERE o.f < {outer} "
            f"AND EXISTS (SELECT * FROM {DB}.e AS a WHERE a.k = o.k AND a.s <> o.s) "
            f"AND NOT EXISTS (SELECT * FROM {DB}.e AS b WHERE b.k = o.k AND b.s <> o.s AND b.g < {sub}) GROUP BY o.s"
        )
    for outer, sub in ((100, 1), (1, 1), (1, 100)):
        queries[f"one EXISTS, outer {outer}%, EXISTS {sub}%"] = (
            f"SELECT o.s, COUNT(*) AS n FROM {DB}.e AS o WHERE o.f < {outer} "
            f"AND EXISTS (SELECT 1 FROM {DB}.e AS a WHERE a.k = o.k AND a.g < {sub}) GROUP BY o.s"
        )
    out = []
    for label, sql in queries.items():
        chosen, decisions = lab.optimized(sql, "merge_correlated_aggregates")
        with threshold_off(correlated_exists, "MIN_JOINS_TO_WINDOW_RATIO"):
            forced, forced_decisions = lab.optimized(sql, "merge_correlated_aggregates")
        figures = (forced_decisions["fired"] or [{}])[0]
        row = {"query": label, "fired": bool(decisions["fired"])}
        row["estimated"] = figures.get("joins_shuffle_bytes", 0) / max(figures.get("window_shuffle_bytes", 1), 1)
        row["written"] = lab.seconds(sql)
        row["window"] = lab.seconds(forced)
        assert lab.rows(forced) == lab.rows(sql), label
        out.append(row)
        print(
            f"  {label}: written {row['written']:.2f} s, window {row['window']:.2f} s; estimated "
            f"{row['estimated']:.2f}x, fired {row['fired']}",
            flush=True,
        )
    return out


def print_exists(rows: list[dict]) -> None:
    print(f"\n{'query':40} {'fired':6} {'est. joins/window':>17} {'written s':>10} {'window s':>9} {'measured':>9}")
    for r in rows:
        print(
            f"{r['query']:40} {str(r['fired']):6} {r['estimated']:16.2f}x {r['written']:10.2f} {r['window']:9.2f} "
            f"{r['written'] / r['window']:8.2f}x"
        )


# -- siblings --------------------------------------------------------------------------------------
def siblings(lab: Lab) -> list[dict]:
    out = []
    for count in (2, 4, 8):
        parts = [
            f"(SELECT COUNT(*) AS n{i}, AVG(v) AS a{i} FROM {DB}.fact WHERE k % 8 = {i} AND v > {i * 10}) AS s{i}"
            for i in range(count)
        ]
        sql = "SELECT * FROM " + " CROSS JOIN ".join(parts)
        chosen, decisions = lab.optimized(sql, "merge_sibling_aggregates")
        row = {"filters": count, "fired": bool(decisions["fired"])}
        row["written"] = lab.seconds(sql)
        row["merged"] = lab.seconds(chosen) if row["fired"] else row["written"]
        assert lab.rows(chosen) == lab.rows(sql), count
        out.append(row)
        print(f"  {count} siblings: written {row['written']:.2f} s, merged {row['merged']:.2f} s", flush=True)
    return out


def print_siblings(rows: list[dict]) -> None:
    print(f"\n{'siblings':>8} {'fired':6} {'written s':>10} {'merged s':>9} {'measured':>9}")
    for r in rows:
        print(
            f"{r['filters']:8} {str(r['fired']):6} {r['written']:10.2f} {r['merged']:9.2f} "
            f"{r['written'] / r['merged']:8.2f}x"
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--parts", default="joins,broadcast_probe,shuffle_hash,shuffle_hash_keys,reorder,skew,window,exists,siblings"
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scale", default="1", help="TPC-H scale of the reorder part")
    args = parser.parse_args()
    started = time.perf_counter()
    spark, common = harness.prepare(args.scale)
    lab = Lab(spark, args.runs)
    results: dict[str, list[dict]] = {}
    parts = args.parts.split(",")
    join_tables(lab)  # the window and sibling parts read them too
    if "joins" in parts:
        print("joins: Spark alone against each join algorithm", flush=True)
        results["joins"] = joins(lab)
    if "broadcast_probe" in parts:
        print("broadcast_probe: Spark alone against BROADCAST by the other side's size", flush=True)
        results["broadcast_probe"] = broadcast_probe(lab)
    if "shuffle_hash" in parts:
        print("shuffle_hash: Spark alone against SHUFFLE_HASH by the other side's size", flush=True)
        results["shuffle_hash"] = shuffle_hash(lab)
    if "shuffle_hash_keys" in parts:
        print("shuffle_hash_keys: sort-merge against SHUFFLE_HASH by the join key's columns and type", flush=True)
        results["shuffle_hash_keys"] = shuffle_hash_keys(lab)
    if "reorder" in parts:
        print("reorder: the written order against reorder_joins' order (no hints)", flush=True)
        results["reorder"] = reorder(lab, common["tpch_schema"])
    if "skew" in parts:
        print("skew: as written against the skew split", flush=True)
        results["skew"] = skew(lab)
    if "window" in parts:
        print("window: an aggregate joined back, as written against the window", flush=True)
        results["window"] = window(lab)
    if "exists" in parts:
        print("exists: EXISTS and NOT EXISTS over the relation itself, as written against the windows", flush=True)
        results["exists"] = exists(lab)
    if "siblings" in parts:
        print("siblings: as written against one pass", flush=True)
        results["siblings"] = siblings(lab)
    printers = {
        "joins": print_joins,
        "broadcast_probe": print_broadcast_probe,
        "shuffle_hash": print_shuffle_hash,
        "shuffle_hash_keys": print_shuffle_hash_keys,
        "reorder": print_reorder,
        "skew": print_skew,
        "window": print_window,
        "exists": print_exists,
        "siblings": print_siblings,
    }
    for part, rows in results.items():
        if rows:
            printers[part](rows)
    os.makedirs(harness.RESULTS, exist_ok=True)
    path = os.path.join(harness.RESULTS, "calibration.json")
    kept = {}
    if os.path.exists(path):  # the parts not run this time keep their last results
        with open(path) as handle:
            kept = json.load(handle)
    with open(path, "w") as handle:
        json.dump({**kept, **results}, handle, indent=1, default=str)
    elapsed = time.perf_counter() - started
    print(f"\nseconds: medians of {args.runs} runs of the SELECT alone, after one untimed run; {elapsed:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
