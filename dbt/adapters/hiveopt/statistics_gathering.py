"""What one statistics pass over a table is: its query, and how its result row becomes TableStats.
Pure functions (no I/O): the service (statistics_service.py) runs the query and stores the result.

One aggregate pass per table gives row count and, per column, NDV (a DataSketches HLL), null
count, min, max and average width; for key columns (join and filter keys of the models) and every
number, date and timestamp column the same pass adds heavy hitters (approx_top_k) and an
equi-height histogram (approx_percentile). Past `sample_above_rows` the pass reads a repeatable
sample and the figures are scaled up (scale_sample, sample_ndv).

>>> round(sample_ndv(seen=1000, sampled=200_000, total=1_000_000))
1000
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.statistics import ColumnStats, Estimate, TableStats

# Distinct counts come from a sketch, never COUNT(DISTINCT): Spark expands the rows once
# per column and shuffles them, which on a warm local[2] session took TPC-H SF 0.1 orders (6 MB)
# 5.8 s against 0.75 s, customer (1.4 MB) 2.4 s against 0.7 s, and supplier (91 KB) 3.5 s in a
# 4-thread build. Seeds get exact statistics from the rows dbt loaded (`statistics_from_rows`).
# The sketch is DataSketches' HLL (hll_sketch_agg, see HLL_LG_K), not approx_count_distinct: that
# one's HyperLogLog++ is an ImperativeAggregate whose 52-word buffer per column is not code-generated,
# and a pass of 29 columns over TPC-H SF 0.1 (sampled) took 10.5 s in a fresh JVM against 7.0 s with
# hll_sketch_agg (warm, the two 2.7-4.2 s, too noisy to tell apart); on lineitem's sample alone (8
# columns, warm) 0.72-0.84 s against 0.42-0.49 s, its NDVs within 2.3% of COUNT(DISTINCT) where
# approx_count_distinct's were within 6%.
# Past this many rows the pass reads a Bernoulli sample of about SAMPLE_ROWS rows (TABLESAMPLE),
# after an exact COUNT(*) (Parquet answers it from file footers): NDVs, null counts and heavy
# hitters are scaled up and marked estimated. 0 switches sampling off (`stats.sample_above_rows`).
# The sketches, not the scan, are the cost. TPC-H SF 1, warm local[2], solo, a 200k-row sample
# against a 50k one: lineitem 5.0 s / 2.3 s, orders 1.7 / 1.1, partsupp 1.4 / 0.8, and read whole
# against a 50k sample: part 1.0 / 0.6, customer 1.0 / 0.7. The NDVs stayed within 1.2x of
# approx_count_distinct over the whole table for every key column of those tables, both ways
# (l_orderkey is 4x too high both ways: values of four rows each look unique in any small
# sample, see sample_ndv); heavy hitters of 1% and more are 500 sampled rows.
DEFAULT_SAMPLE_ABOVE_ROWS = 100_000


SAMPLE_ROWS = 50_000


# The sample's seed: the same data gives the same sample, so the same statistics (and decisions).
SAMPLE_SEED = 1


# A sample whose distinct count is this share of its rows looks unique (see sample_ndv).
UNIQUE_LOOKING = 0.9


# Tables smaller than this are read whole without counting them first (the count is a job too):
# under 4 MB of Parquet there are rarely more than DEFAULT_SAMPLE_ABOVE_ROWS rows.
SAMPLE_CHECK_ABOVE_BYTES = 4 * 1024 * 1024


DEFAULT_HEAVY_HITTERS = 10


# hll_sketch_agg's log2 of its buckets: 2^12 of them, a relative standard error of about 1.6%
# (approx_count_distinct's default is 5%). The sketch takes integers, strings and binaries: every
# column is given to it as its 64-bit xxhash (a collision among a table's values is unlikely).
HLL_LG_K = 12


DEFAULT_HISTOGRAM_BUCKETS = 32


# approx_percentile accuracy: 1/accuracy is the relative rank error (Spark's default is 10000).
HISTOGRAM_ACCURACY = 1000


NUMERIC_TYPES = (
    "tinyint",
    "smallint",
    "int",
    "integer",
    "bigint",
    "float",
    "double",
    "decimal",
    "byte",
    "short",
    "long",
)


ORDERED_TYPES = NUMERIC_TYPES + ("date", "timestamp", "timestamp_ntz")


# Column types every full pass details (heavy hitters, histogram): the usual join and range-filter
# keys, cheap to sketch. Measured on TPC-H SF 0.1 (warm local[2]): detailing lineitem's 7 integer
# and date columns took 2.4 s against 1.7 s for one key, and spared the 1-2.4 s second passes that
# models joining on the other keys paid. Numbers too (SF 1, 200k-row samples): lineitem's 4
# decimals added 0.2 s to 2.7 s, orders' o_totalprice nothing to 1.1 s, where a model filtering on
# it paid a second pass of 5.1 s in a 4-thread build. Strings only when a model uses them as keys.
ALWAYS_DETAILED_TYPES = ORDERED_TYPES


ATOMIC_TYPES = ORDERED_TYPES + ("string", "varchar", "char", "boolean", "binary")


def base_type(data_type: str) -> str:
    return data_type.split("(")[0].split("<")[0].strip().lower()


def gather_query(
    table: str,
    columns: dict[str, str],
    key_columns: Iterable[str],
    heavy_hitters: int = DEFAULT_HEAVY_HITTERS,
    buckets: int = DEFAULT_HISTOGRAM_BUCKETS,
    sample_percent: float | None = None,
    ranged: Iterable[str] | None = None,
) -> exp.Select:
    """The one aggregate pass, as an AST. Results are strings (to_json for arrays) so that dbt's
    agate conversion and the Thrift protocol return the same thing. `sample_percent`: over a
    Bernoulli sample (TABLESAMPLE) of the table. `ranged`: the key columns given a histogram
    (None: every number and date among them); a histogram serves range filters only."""
    keys = {k.lower() for k in key_columns}
    histograms = None if ranged is None else {r.lower() for r in ranged}
    projections: list[exp.Expression] = [exp.alias_(exp.Count(this=exp.Star()), "row_count")]
    for i, (name, data_type) in enumerate(columns.items()):
        column = exp.column(name, quoted=True)
        base = base_type(data_type)
        projections.append(exp.alias_(exp.Count(this=column.copy()), f"c{i}_nonnull"))
        if base not in ATOMIC_TYPES:
            continue
        projections.append(exp.alias_(distinct_count(column), f"c{i}_ndv"))
        if base in ORDERED_TYPES:
            projections.append(exp.alias_(exp.cast(exp.Min(this=column.copy()), "string"), f"c{i}_min"))
            projections.append(exp.alias_(exp.cast(exp.Max(this=column.copy()), "string"), f"c{i}_max"))
        if base in ("string", "varchar", "char", "binary"):
            projections.append(exp.alias_(exp.Avg(this=exp.Length(this=column.copy())), f"c{i}_width"))
        if name.lower() in keys and base != "boolean":
            projections.append(
                exp.alias_(
                    exp.func("to_json", exp.func("approx_top_k", column.copy(), exp.Literal.number(heavy_hitters))),
                    f"c{i}_hh",
                )
            )
            if base in ORDERED_TYPES and (histograms is None or name.lower() in histograms):
                ranks = exp.Array(expressions=[exp.Literal.number(round(j / buckets, 6)) for j in range(buckets + 1)])
                projections.append(
                    exp.alias_(
                        exp.func(
                            "to_json",
                            exp.func("approx_percentile", column.copy(), ranks, exp.Literal.number(HISTOGRAM_ACCURACY)),
                        ),
                        f"c{i}_hist",
                    )
                )
    source = exp.to_table(table)
    if sample_percent is not None:
        source.set(
            "sample",
            exp.TableSample(percent=exp.Literal.number(round(sample_percent, 4)), seed=exp.Literal.number(SAMPLE_SEED)),
        )
    return exp.select(*projections).from_(source)


def distinct_count(column: exp.Expression) -> exp.Expression:
    """The column's approximate distinct count: a DataSketches HLL of its values' hashes, NULLs
    left out (xxhash64 of a NULL is a number, its seed).

    >>> distinct_count(exp.column("k", quoted=True)).sql("spark")
    'HLL_SKETCH_ESTIMATE(HLL_SKETCH_AGG(IF(`k` IS NULL, NULL, XXHASH64(`k`)), 12))'
    """
    hashed = exp.If(
        this=exp.Is(this=column.copy(), expression=exp.Null()),
        true=exp.Null(),
        false=exp.func("xxhash64", column.copy()),
    )
    return exp.func("hll_sketch_estimate", exp.func("hll_sketch_agg", hashed, exp.Literal.number(HLL_LG_K)))


def batched(queries: dict[str, exp.Select]) -> exp.Query:
    """Several tables' aggregate passes as one query (one Spark job, whose scans run side by
    side): a row per table, its name and its pass's row as JSON, read back by `parse_batched_row`.
    Each pass alone paid a job's fixed cost: TPC-H SF 0.1 supplier (1,000 rows) 0.26 s warm.

    >>> q = batched({"db.a": exp.select(exp.alias_(exp.Count(this=exp.Star()), "row_count")).from_("db.a")})
    >>> q.sql("spark")
    "SELECT 'db.a' AS table_name, TO_JSON(STRUCT(*)) AS payload FROM (SELECT COUNT(*) AS row_count FROM db.a) AS q"
    """
    branches = [
        exp.select(
            exp.alias_(exp.Literal.string(name), "table_name"),
            exp.alias_(exp.func("to_json", exp.func("struct", exp.Star())), "payload"),
        ).from_(query.subquery("q"))
        for name, query in queries.items()
    ]
    union: exp.Query = branches[0]
    for branch in branches[1:]:
        union = exp.union(union, branch, distinct=False)
    return union


def parse_batched_row(query: exp.Select, payload: Any) -> list[Any]:
    """A table's row of `batched`, in the order of its pass's columns (a NULL is left out of the
    JSON: None).

    >>> q = exp.select(exp.alias_(exp.Count(this=exp.Star()), "row_count"), exp.alias_("x", "c0_min")).from_("t")
    >>> parse_batched_row(q, '{"row_count": 3}')
    [3, None]
    """
    values = json.loads(str(payload))
    return [values.get(p.alias_or_name) for p in query.selects]


def count_query(tables: Sequence[str]) -> exp.Query:
    """The exact row counts of several tables in one query (Parquet answers each from its file
    footers).

    >>> print(count_query(["db.a", "db.b"]).sql("spark", pretty=True))
    SELECT
      'db.a' AS table_name,
      COUNT(*) AS row_count
    FROM db.a
    UNION ALL
    SELECT
      'db.b' AS table_name,
      COUNT(*) AS row_count
    FROM db.b
    """
    branches = [
        exp.select(
            exp.alias_(exp.Literal.string(name), "table_name"), exp.alias_(exp.Count(this=exp.Star()), "row_count")
        ).from_(exp.to_table(name))
        for name in tables
    ]
    union: exp.Query = branches[0]
    for branch in branches[1:]:
        union = exp.union(union, branch, distinct=False)
    return union


def sample_ndv(seen: float, sampled: float, total: float) -> float:
    """The distinct values of a column of `total` non-null values, `seen` of which showed up in a
    Bernoulli sample of `sampled` of them: the D whose expected distinct count in such a sample,
    every value having total/D rows, is `seen` (D * (1 - (1 - q) ** (total / D)) with q the
    sampled share; the uniform-frequency estimator). A column of few values keeps what the sample
    saw, one in between is scaled up (values of four rows each, in a 10% sample, by about 2.9).
    A column whose sample looks unique, within a few errors of the sketch (1.6%), scales
    by 1/q: near that end the estimator is too steep to trust a sketch (a unique column's sample
    counted 6% low gave 158,000 for 400,000). Values of two rows each look unique in a sample of
    up to 20% and come out twice too many: a 5% sketch cannot tell them apart, and a 1% one,
    which could, made the NDVs of orders 7x as slow (6.5 s against 0.9 s at SF 1).

    >>> round(sample_ndv(990, 1000, 10000)), round(sample_ndv(920, 1000, 10000)), round(sample_ndv(50, 990, 9900))
    (9900, 9200, 50)
    >>> round(sample_ndv(8598, 10000, 100000), -1)  # 25,000 values of 4 rows each, a 10% sample
    25010.0
    """
    if sampled <= 0 or total <= sampled or seen <= 0:
        return float(seen)
    if seen >= UNIQUE_LOOKING * sampled:
        return float(total) * seen / sampled
    q = sampled / total

    def expected(d: float) -> float:
        return d * (1.0 - (1.0 - q) ** (total / d))

    if seen >= expected(total):
        return float(total)
    low, high = float(seen), float(total)
    for _ in range(100):  # expected() grows with d: bisect
        middle = (low + high) / 2
        low, high = (middle, high) if expected(middle) < seen else (low, middle)
    return (low + high) / 2


def scale_sample(stats: TableStats, rows: int) -> TableStats:
    """Statistics of a sample in the whole table's terms: the exact row count, null counts and
    heavy-hitter counts scaled by rows/sampled, NDVs by `sample_ndv`. Everything but the row
    count is then an estimate.

    >>> sample = TableStats(row_count=Estimate.exact(1000), columns={
    ...     "id": ColumnStats(ndv=Estimate.estimated(990), null_count=Estimate.exact(0)),
    ...     "k": ColumnStats(ndv=Estimate.estimated(50), null_count=Estimate.exact(10), heavy_hitters=[(7, 300.0)])})
    >>> whole = scale_sample(sample, 10000)
    >>> whole.row_count.value, round(whole.column("id").ndv.value), round(whole.column("k").ndv.value)
    (10000.0, 9900, 50)
    >>> whole.column("k").null_count.value, whole.column("k").heavy_hitters, whole.column("k").null_count.precision.name
    (100.0, [(7, 3000.0)], 'ESTIMATED')
    """
    sampled = stats.row_count.value or 0.0
    factor = rows / sampled if sampled else 1.0
    for column in stats.columns.values():
        nonnull = sampled - (column.null_count.value or 0.0)
        if not column.null_count.is_absent:
            column.null_count = Estimate.estimated(column.null_count.value * factor)
        if not column.ndv.is_absent:
            ndv = sample_ndv(min(column.ndv.value, nonnull), nonnull, nonnull * factor)
            column.ndv = Estimate.estimated(float(min(ndv, rows)))
        if column.heavy_hitters:
            column.heavy_hitters = [(value, count * factor) for value, count in column.heavy_hitters]
    stats.row_count = Estimate.exact(float(rows))
    return stats


def _typed(value: Any, base: str) -> Any:
    """A gathered value in the column's terms: numbers for numeric types, ISO text otherwise."""
    if value is None:
        return None
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat(sep=" ") if isinstance(value, _dt.datetime) else value.isoformat()
    if base in NUMERIC_TYPES:
        try:
            number = float(value)
            return int(number) if number.is_integer() and base not in ("float", "double", "decimal") else number
        except (TypeError, ValueError):
            return None
    return str(value)


def parse_gather_row(names: Sequence[str], row: Sequence[Any], columns: dict[str, str], fingerprint: str) -> TableStats:
    values = dict(zip(names, row))
    rows = int(float(values["row_count"]))
    stats = TableStats(
        row_count=Estimate.exact(rows),
        fingerprint=fingerprint,
        collected_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )
    for i, (name, data_type) in enumerate(columns.items()):
        base = base_type(data_type)
        nonnull = values.get(f"c{i}_nonnull")
        column = ColumnStats(data_type=data_type)
        if nonnull is not None:
            column.null_count = Estimate.exact(rows - int(float(nonnull)))
        if values.get(f"c{i}_ndv") is not None:
            ndv = float(values[f"c{i}_ndv"])
            column.ndv = Estimate.estimated(ndv)
        column.min = _typed(values.get(f"c{i}_min"), base)
        column.max = _typed(values.get(f"c{i}_max"), base)
        if values.get(f"c{i}_width") is not None:
            column.avg_width = Estimate.estimated(float(values[f"c{i}_width"]))
        if values.get(f"c{i}_hh") is not None:
            items = json.loads(str(values[f"c{i}_hh"]))
            column.heavy_hitters = [
                (_typed(it["item"], base), float(it["count"])) for it in items if it.get("item") is not None
            ]
        if values.get(f"c{i}_hist") not in (None, "null"):
            column.histogram = [_typed(v, base) for v in json.loads(str(values[f"c{i}_hist"]))]
        stats.columns[name.lower()] = column
    return stats


def statistics_from_rows(
    columns: dict[str, str],
    rows: Sequence[Sequence[Any]],
    fingerprint: str = "",
    heavy_hitters: int = DEFAULT_HEAVY_HITTERS,
    buckets: int = DEFAULT_HISTOGRAM_BUCKETS,
) -> TableStats:
    """Exact statistics of a table from its rows in Python (a seed: dbt has just read its CSV, so
    no Spark job is needed): the numbers the Spark pass gathers, all exact, with heavy hitters and
    a histogram for every column (any may be a join key). Values are put in the column's terms the
    way the pass reads them (`_typed`); columns of other types get their null count only.

    >>> stats = statistics_from_rows({"k": "bigint", "name": "string"},
    ...                              [(1, "a"), (1, "bb"), (2, None), (None, "a")], buckets=2)
    >>> stats.row_count.value, stats.column("k").ndv.value, stats.column("k").null_count.value
    (4, 2.0, 1)
    >>> stats.column("k").heavy_hitters, stats.column("k").histogram, (stats.column("k").min, stats.column("k").max)
    ([(1, 2.0), (2, 1.0)], [1, 1, 2], (1, 2))
    >>> name = stats.column("name")
    >>> name.heavy_hitters, name.avg_width.value, name.ndv.precision.name
    ([('a', 2.0), ('bb', 1.0)], 1.333, 'EXACT')
    """
    stats = TableStats(
        row_count=Estimate.exact(len(rows)),
        fingerprint=fingerprint,
        collected_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )
    for i, (name, data_type) in enumerate(columns.items()):
        base = base_type(data_type)
        raw = [row[i] for row in rows]
        column = ColumnStats(data_type=data_type, null_count=Estimate.exact(sum(v is None for v in raw)))
        stats.columns[name.lower()] = column
        if base not in ATOMIC_TYPES or base in ("boolean", "binary"):
            continue
        values = [_typed(v, base) for v in raw if v is not None]
        if len(values) != len(raw) - column.null_count.value or any(v is None for v in values):
            continue  # a value that does not read as the column's type: leave the column to Spark's estimates
        counts: dict[Any, int] = {}
        for value in values:
            counts[value] = counts.get(value, 0) + 1
        column.ndv = Estimate.exact(float(len(counts)))
        ranked = sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))[:heavy_hitters]
        column.heavy_hitters = [(value, float(count)) for value, count in ranked]
        if base in ORDERED_TYPES:
            ordered = sorted(values)
            if ordered:
                column.min, column.max = ordered[0], ordered[-1]
                column.histogram = [
                    ordered[max(0, math.ceil(j / buckets * len(ordered)) - 1)] for j in range(buckets + 1)
                ]
        else:
            column.avg_width = Estimate.estimated(
                round(sum(len(str(v)) for v in values) / len(values), 3) if values else 0.0
            )
    return stats
