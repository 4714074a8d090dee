"""Gathering, storing and reading statistics: the only place (with verify) where hiveopt queries
Spark. It runs SQL through an `execute(sql) -> rows` function, so the same code serves dbt's
connection (session or Thrift) and a plain SparkSession in tests.

Where statistics live: a Parquet table `<stats schema>.statistics` (default schema `hiveopt`) in
the warehouse next to the tables, one JSON payload per table and collection, keyed by the table's
name and a fingerprint of its data (creation time and total file size in the catalog, measured
with Spark's `ANALYZE TABLE ... COMPUTE STATISTICS NOSCAN` when the catalog has none: Spark drops
it when a table is written). Anyone using the same metastore sees the same statistics; a table
whose fingerprint changed since collection is stale and gathered again.

One aggregate pass per table gives row count and, per column, NDV (approx_count_distinct), null
count, min, max and average width; for key columns (join and filter keys of the models) the same
pass adds heavy hitters (approx_top_k) and an equi-height histogram (approx_percentile).
"""

from __future__ import annotations

import datetime as _dt
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT

from dbt.adapters.hiveopt.optimizer.statistics import ColumnStats, Estimate, TableStats

Execute = Callable[[str], List[Tuple[Any, ...]]]

DEFAULT_STATS_SCHEMA = "hiveopt"
STATS_TABLE = "statistics"
# The store is append-only (each save writes a file); past this many superseded rows, or files, a
# run rewrites it with the latest rows only. Files because the run's first model waits for the
# read: 126 one-row files took 0.64 s to collect on a warm local session, one file 0.21 s.
COMPACT_AFTER_SUPERSEDED_ROWS = 200
COMPACT_AFTER_FILES = 16
DEFAULT_HEAVY_HITTERS = 10
DEFAULT_HISTOGRAM_BUCKETS = 32
# approx_percentile accuracy: 1/accuracy is the relative rank error (Spark's default is 10000).
HISTOGRAM_ACCURACY = 1000
NUMERIC_TYPES = ("tinyint", "smallint", "int", "integer", "bigint", "float", "double", "decimal", "byte", "short", "long")
ORDERED_TYPES = NUMERIC_TYPES + ("date", "timestamp", "timestamp_ntz")
ATOMIC_TYPES = ORDERED_TYPES + ("string", "varchar", "char", "boolean", "binary")


def _base_type(data_type: str) -> str:
    return data_type.split("(")[0].split("<")[0].strip().lower()


@dataclass
class TableInfo:
    name: str  # db.table, lowercase
    columns: Dict[str, str]  # name as the catalog spells it -> type
    kind: str  # MANAGED / EXTERNAL / VIEW
    created: str = ""
    size_bytes: Optional[int] = None
    partition_columns: List[str] = field(default_factory=list)
    bucket_columns: List[str] = field(default_factory=list)

    @property
    def is_view(self) -> bool:
        return self.kind.upper() == "VIEW"

    @property
    def fingerprint(self) -> str:
        return f"{self.created}|{self.size_bytes}"


@dataclass
class GatherResult:
    stats: TableStats
    seconds: float


def parse_describe(name: str, rows: Sequence[Tuple[Any, ...]]) -> TableInfo:
    """Read columns, kind, creation time and size from DESCRIBE TABLE EXTENDED rows."""
    columns: Dict[str, str] = {}
    partitions: List[str] = []
    details: Dict[str, str] = {}
    section = "columns"
    for row in rows:
        key = str(row[0] or "").strip()
        value = str(row[1] or "").strip() if len(row) > 1 else ""
        if key.startswith("# Partition Information"):
            section = "partitions"
            continue
        if key.startswith("# Detailed Table Information"):
            section = "details"
            continue
        if not key or key.startswith("#"):
            continue
        if section == "columns":
            columns[key] = value
        elif section == "partitions":
            partitions.append(key)
        else:
            details[key] = value
    size = None
    statistics = details.get("Statistics", "")
    if "bytes" in statistics:
        try:
            size = int(statistics.split("bytes")[0].strip())
        except ValueError:
            size = None
    buckets = [c.strip(" `") for c in details.get("Bucket Columns", "").strip("[]").split(",") if c.strip(" `")]
    return TableInfo(
        name=name.lower(), columns=columns, kind=details.get("Type", "MANAGED"),
        created=details.get("Created Time", ""), size_bytes=size, partition_columns=partitions,
        bucket_columns=buckets,
    )


def gather_query(table: str, columns: Dict[str, str], key_columns: Iterable[str],
                 heavy_hitters: int = DEFAULT_HEAVY_HITTERS, buckets: int = DEFAULT_HISTOGRAM_BUCKETS) -> exp.Select:
    """The one aggregate pass, as an AST. Results are strings (to_json for arrays) so that dbt's
    agate conversion and the Thrift protocol return the same thing."""
    keys = {k.lower() for k in key_columns}
    projections: List[exp.Expression] = [exp.alias_(exp.Count(this=exp.Star()), "row_count")]
    for i, (name, data_type) in enumerate(columns.items()):
        column = exp.column(name, quoted=True)
        base = _base_type(data_type)
        projections.append(exp.alias_(exp.Count(this=column.copy()), f"c{i}_nonnull"))
        if base not in ATOMIC_TYPES:
            continue
        projections.append(exp.alias_(exp.func("approx_count_distinct", column.copy()), f"c{i}_ndv"))
        if base in ORDERED_TYPES:
            projections.append(exp.alias_(exp.cast(exp.Min(this=column.copy()), "string"), f"c{i}_min"))
            projections.append(exp.alias_(exp.cast(exp.Max(this=column.copy()), "string"), f"c{i}_max"))
        if base in ("string", "varchar", "char", "binary"):
            projections.append(exp.alias_(exp.Avg(this=exp.Length(this=column.copy())), f"c{i}_width"))
        if name.lower() in keys and base != "boolean":
            projections.append(exp.alias_(
                exp.func("to_json", exp.func("approx_top_k", column.copy(), exp.Literal.number(heavy_hitters))),
                f"c{i}_hh"))
            if base in ORDERED_TYPES:
                ranks = exp.Array(expressions=[exp.Literal.number(round(j / buckets, 6)) for j in range(buckets + 1)])
                projections.append(exp.alias_(
                    exp.func("to_json", exp.func("approx_percentile", column.copy(), ranks, exp.Literal.number(HISTOGRAM_ACCURACY))),
                    f"c{i}_hist"))
    return exp.select(*projections).from_(exp.to_table(table))


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


def parse_gather_row(names: Sequence[str], row: Sequence[Any], columns: Dict[str, str], fingerprint: str) -> TableStats:
    values = dict(zip(names, row))
    rows = int(float(values["row_count"]))
    stats = TableStats(row_count=Estimate.exact(rows), fingerprint=fingerprint,
                       collected_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    for i, (name, data_type) in enumerate(columns.items()):
        base = _base_type(data_type)
        nonnull = values.get(f"c{i}_nonnull")
        column = ColumnStats(data_type=data_type)
        if nonnull is not None:
            column.null_count = Estimate.exact(rows - int(float(nonnull)))
        if values.get(f"c{i}_ndv") is not None:
            column.ndv = Estimate.estimated(float(values[f"c{i}_ndv"]))
        column.min = _typed(values.get(f"c{i}_min"), base)
        column.max = _typed(values.get(f"c{i}_max"), base)
        if values.get(f"c{i}_width") is not None:
            column.avg_width = Estimate.estimated(float(values[f"c{i}_width"]))
        if values.get(f"c{i}_hh") is not None:
            items = json.loads(str(values[f"c{i}_hh"]))
            column.heavy_hitters = [(_typed(it["item"], base), float(it["count"])) for it in items if it.get("item") is not None]
        if values.get(f"c{i}_hist") not in (None, "null"):
            column.histogram = [_typed(v, base) for v in json.loads(str(values[f"c{i}_hist"]))]
        stats.columns[name.lower()] = column
    return stats


class StatisticsService:
    """Statistics for the tables a model reads, gathered when absent or stale, cached per run."""

    def __init__(self, execute: Execute, stats_schema: str = DEFAULT_STATS_SCHEMA,
                 heavy_hitters: int = DEFAULT_HEAVY_HITTERS, buckets: int = DEFAULT_HISTOGRAM_BUCKETS):
        self.execute = execute
        self.stats_schema = stats_schema
        self.heavy_hitters = heavy_hitters
        self.buckets = buckets
        self._lock = threading.RLock()
        self._infos: Dict[str, TableInfo] = {}
        self._stats: Dict[str, TableStats] = {}
        self._store_loaded = False
        self._store_ready = False

    @property
    def store_table(self) -> exp.Table:
        return exp.table_(STATS_TABLE, db=self.stats_schema)

    # -- catalog ------------------------------------------------------------------------------
    def describe(self, name: str, refresh: bool = False) -> TableInfo:
        """Columns and fingerprint of a table, once per run unless refreshed (after a build)."""
        name = name.lower()
        with self._lock:
            if name in self._infos and not refresh:
                return self._infos[name]
        table = exp.to_table(name).sql(DIALECT)
        info = parse_describe(name, self.execute(f"DESCRIBE TABLE EXTENDED {table}"))
        if not info.is_view and info.size_bytes is None:
            # No size in the catalog: never measured, or dropped by Spark when the table was
            # written since (an INSERT clears stale catalog statistics). NOSCAN only lists files.
            self.execute(f"ANALYZE TABLE {table} COMPUTE STATISTICS NOSCAN")
            info = parse_describe(name, self.execute(f"DESCRIBE TABLE EXTENDED {table}"))
        with self._lock:
            self._infos[name] = info
        return info

    # -- the store ----------------------------------------------------------------------------
    def _ensure_store(self) -> None:
        if self._store_ready:
            return
        self.execute(f"CREATE DATABASE IF NOT EXISTS {exp.to_identifier(self.stats_schema).sql(DIALECT)}")
        self.execute(
            f"CREATE TABLE IF NOT EXISTS {self.store_table.sql(DIALECT)} (table_name STRING, fingerprint STRING, "
            "saved_at STRING, gather_seconds DOUBLE, payload STRING) USING parquet"
        )
        self._store_ready = True

    def load(self, names: Iterable[str] = ()) -> None:
        """Read the latest statistics of every table in the store, once per run (one query)."""
        if self._store_loaded:
            return
        self._ensure_store()
        query = exp.select("table_name", "fingerprint", "saved_at", "payload",
                           exp.func("input_file_name")).from_(self.store_table)
        rows = self.execute(query.sql(DIALECT))
        latest: Dict[str, Tuple[str, Any, Any]] = {}
        files = {row[4] for row in rows}
        for table_name, fingerprint, saved_at, payload, _file in rows:
            key = str(table_name)
            if key not in latest or str(saved_at) > latest[key][0]:
                latest[key] = (str(saved_at), fingerprint, payload)
        with self._lock:
            for key, (_, fingerprint, payload) in latest.items():
                if key not in self._stats:
                    stats = TableStats.from_dict(json.loads(str(payload)))
                    stats.fingerprint = str(fingerprint)
                    self._stats[key] = stats
            self._store_loaded = True
        if len(rows) - len(latest) > COMPACT_AFTER_SUPERSEDED_ROWS or len(files) > COMPACT_AFTER_FILES:
            self._compact([(k, v[0], v[1], v[2]) for k, v in latest.items()])

    def _compact(self, rows: List[Tuple[Any, ...]]) -> None:
        """Keep only the latest row per table (the store is append-only between compactions)."""
        values = exp.Values(expressions=[
            exp.Tuple(expressions=[exp.Literal.string(str(name)), exp.Literal.string(str(fingerprint)),
                                   exp.Literal.string(saved_at), exp.Literal.number(0), exp.Literal.string(str(payload))])
            for name, saved_at, fingerprint, payload in rows
        ])
        self.execute(exp.insert(values, self.store_table, overwrite=True).sql(DIALECT))

    def save(self, name: str, stats: TableStats, seconds: float) -> None:
        self._ensure_store()
        saved_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")
        row = exp.Tuple(expressions=[
            exp.Literal.string(name.lower()), exp.Literal.string(stats.fingerprint or ""),
            exp.Literal.string(saved_at), exp.Literal.number(round(seconds, 3)),
            exp.Literal.string(json.dumps(stats.to_dict(), default=str)),
        ])
        insert = exp.insert(exp.Values(expressions=[row]), self.store_table)
        self.execute(insert.sql(DIALECT))
        with self._lock:
            self._stats[name.lower()] = stats

    # -- gathering ----------------------------------------------------------------------------
    def gather(self, name: str, key_columns: Iterable[str] = ()) -> GatherResult:
        """The full pass: every column, with detail (heavy hitters, histogram) for key columns."""
        info = self.describe(name)
        self.load()
        previous = self._stats.get(name.lower())
        keys = {k.lower() for k in key_columns}
        if previous is not None:  # keep detailing the keys that earlier models asked for
            keys |= {c for c, s in previous.columns.items() if s.heavy_hitters is not None}
        stats, seconds = self._run_pass(name, info.columns, keys, info.fingerprint)
        stats.size_bytes = Estimate.exact(info.size_bytes) if info.size_bytes is not None else Estimate.absent()
        self.save(name, stats, seconds)
        return GatherResult(stats, seconds)

    def gather_key_detail(self, name: str, stats: TableStats, key_columns: Iterable[str]) -> GatherResult:
        """A pass over only the key columns that lack detail, merged into current statistics."""
        info = self.describe(name)
        wanted = {k.lower() for k in key_columns}
        columns = {c: t for c, t in info.columns.items() if c.lower() in wanted}
        detail, seconds = self._run_pass(name, columns, wanted, info.fingerprint)
        for column_name, column in detail.columns.items():
            merged = stats.columns.setdefault(column_name, column)
            merged.heavy_hitters = column.heavy_hitters if column.heavy_hitters is not None else []
            merged.histogram = column.histogram
        self.save(name, stats, seconds)
        return GatherResult(stats, seconds)

    def _run_pass(self, name: str, columns: Dict[str, str], keys: Set[str], fingerprint: str) -> Tuple[TableStats, float]:
        query = gather_query(name, columns, keys, self.heavy_hitters, self.buckets)
        started = time.perf_counter()
        rows = self.execute(query.sql(DIALECT))
        seconds = time.perf_counter() - started
        names = [p.alias_or_name for p in query.selects]
        stats = parse_gather_row(names, rows[0], columns, fingerprint)
        for key in keys:  # detail asked for: [] records "gathered, nothing hot" (or not applicable)
            if key in stats.columns and stats.columns[key].heavy_hitters is None:
                stats.columns[key].heavy_hitters = []
        return stats, seconds

    def current(self, name: str) -> Tuple[Optional[TableStats], str]:
        """Stored statistics if they match the table as it is now, with the reason otherwise."""
        name = name.lower()
        info = self.describe(name)
        if info.is_view:
            return None, "view: no statistics (its own tables have them)"
        self.load()
        stats = self._stats.get(name)
        if stats is None:
            return None, "never gathered"
        if stats.fingerprint != info.fingerprint:
            return None, f"stale (table changed since {stats.collected_at})"
        return stats, "current"

    def ensure(self, name: str, key_columns: Iterable[str] = (), auto_gather: bool = True) -> Tuple[Optional[TableStats], str, float]:
        """Current statistics of a table, gathering them when absent, stale or missing a key column's
        detail. Returns (stats or None, what happened, seconds spent gathering)."""
        stats, state = self.current(name)
        if self.describe(name).is_view:
            return None, state, 0.0
        keys = {k.lower() for k in key_columns}
        missing_keys = stats is not None and any(
            k in stats.columns and stats.columns[k].heavy_hitters is None for k in keys)
        if stats is not None and not missing_keys:
            return stats, state, 0.0
        if not auto_gather:
            return stats, f"{state}; automatic gathering is off", 0.0
        if stats is not None:
            result = self.gather_key_detail(name, stats, keys)
            return result.stats, "gathered key-column detail", result.seconds
        result = self.gather(name, keys)
        return result.stats, "gathered", result.seconds
