"""The fuzzer's tables: a fixed set of small tables in the Spark database `fuzz`, generated
deterministically from a seed and written once per session as Parquet tables.

Every join column belongs to a *domain* (K, S, D, G, P, ID, DK, X): columns of one domain have
one Spark type in every table and draw from one set of values, so joins between any two of them
match rows. The data holds what equivalence runs need: NULL keys, duplicate keys, hot keys (one
value holds 80-95% of `fact.k`, `fact2.k`, `fact2.s` and `part_f.p`), strings with quotes,
backslashes, tabs and unicode, decimal and double columns (-0.0 and a NaN among them), dates, and
one table partitioned by a key column (`part_f`, PARTITIONED BY p), and boolean columns with NULLs
(`fact.flag`, `dim_k.active`, `orders.is_open`: a bare column is a whole predicate). Dimensions hold few
duplicates and never duplicate a hot key, so a join of two hot tables and any number of
dimensions stays around the size of the two hot tables' join.

>>> data = build_data()
>>> sorted(data.schema()["fuzz"]) == sorted(TABLES)
True
>>> data.partitioning()
{'fuzz.part_f': ['p']}
>>> share = data.frequencies["fact"]["k"].most_common(1)[0][1] / len(data.rows["fact"])
>>> 0.8 <= share <= 0.95
True
"""

from __future__ import annotations

import datetime
import decimal
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

DATABASE = "fuzz"
DEFAULT_SEED = 20240105

# Domains: the values a join column of that domain draws from.
S_VALUES = [
    "it's",
    "back\\slash",
    "\\",
    "a'b\\'c",
    'dq"uote',
    "ünïcödé",
    "日本語",
    "emoji 😀",
    "tab\tx",
    "new\nline",
    "",
    " lead",
    "percent%_",
    "O'Brien",
    "plain",
    "zz",
]
DK_VALUES = [decimal.Decimal(v) for v in ("1.50", "2.25", "3.00", "10.10", "-4.75", "0.00", "99.99")]
X_VALUES = [0.5, 1.25, -2.0, 3.75, 0.0, -0.0, 100.125, 0.001]
DAY0 = datetime.date(2024, 1, 1)
DOMAIN_TYPES = {
    "K": "int",
    "S": "string",
    "D": "date",
    "G": "int",
    "P": "int",
    "ID": "bigint",
    "DK": "decimal(10,2)",
    "X": "double",
}
HOT_K = 7
HOT_S = "it's"
HOT_P = 0


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    domain: str | None = None  # None: a measure, not joined on


def _c(name: str, domain_or_type: str) -> Column:
    if domain_or_type in DOMAIN_TYPES:
        return Column(name, DOMAIN_TYPES[domain_or_type], domain_or_type)
    return Column(name, domain_or_type)


# Column order is Spark's: a partitioned table's partition column comes last.
TABLES: dict[str, list[Column]] = {
    "fact": [
        _c("id", "ID"),
        _c("k", "K"),
        _c("s", "S"),
        _c("dt", "D"),
        _c("g", "G"),
        _c("p", "P"),
        _c("dk", "DK"),
        _c("x", "X"),
        _c("q", "int"),
        _c("amt", "decimal(12,2)"),
        _c("v", "double"),
        _c("flag", "boolean"),
    ],
    "fact2": [
        _c("id", "bigint"),
        _c("fact_id", "ID"),
        _c("k", "K"),
        _c("s", "S"),
        _c("dt", "D"),
        _c("g", "G"),
        _c("q", "int"),
        _c("amt", "decimal(12,2)"),
        _c("v", "double"),
    ],
    "part_f": [
        _c("id", "bigint"),
        _c("k", "K"),
        _c("s", "S"),
        _c("dt", "D"),
        _c("q", "int"),
        _c("amt", "decimal(12,2)"),
        _c("v", "double"),
        _c("p", "P"),
    ],
    "dim_k": [
        _c("k", "K"),
        _c("name", "string"),
        _c("g", "G"),
        _c("w", "X"),
        _c("dk", "DK"),
        _c("r", "int"),
        _c("active", "boolean"),
    ],
    "dim_s": [_c("s", "S"), _c("label", "string"), _c("g", "G"), _c("r", "int")],
    "dim_d": [_c("dt", "D"), _c("yr", "int"), _c("mo", "int"), _c("wk", "int"), _c("p", "P")],
    "dim_p": [_c("p", "P"), _c("region", "string"), _c("g", "G")],
    "dim_g": [_c("g", "G"), _c("gname", "string"), _c("r", "int")],
    "orders": [
        _c("order_id", "ID"),
        _c("k", "K"),
        _c("g", "G"),
        _c("dt", "D"),
        _c("s", "S"),
        _c("r", "int"),
        _c("is_open", "boolean"),
    ],
    "lines": [
        _c("line_id", "bigint"),
        _c("order_id", "ID"),
        _c("q", "int"),
        _c("amt", "decimal(12,2)"),
        _c("v", "double"),
    ],
}
PARTITIONED = {"part_f": ["p"]}
# Tables with a hot key: at most two of them (or two reads of one) in a query's joins.
HOT_TABLES = ("fact", "fact2", "part_f")


@dataclass
class FuzzData:
    seed: int
    rows: dict[str, list[tuple]]
    # table -> column -> Counter of non-NULL values (what an equi-join can match)
    frequencies: dict[str, dict[str, Counter]] = field(default_factory=dict)
    # What inputs.random_config draws config from (fuzz.corpus has its own): the database, each
    # table's columns (a join column has a domain), the tables skewed_keys names most often.
    database = DATABASE
    tables = TABLES
    skew_pool = ("fact", "fact2", "part_f", "dim_k", "orders", "dim_s", "fact")

    def schema(self) -> dict[str, dict[str, dict[str, str]]]:
        """{db: {table: {column: spark type}}}, as the optimizer's context takes it."""
        return {DATABASE: {t: {c.name: c.type for c in cols} for t, cols in TABLES.items()}}

    def partitioning(self) -> dict[str, list[str]]:
        return {f"{DATABASE}.{t}": list(cols) for t, cols in PARTITIONED.items()}

    def values(self, table: str, column: str) -> list[Any]:
        """The column's distinct non-NULL values, most frequent first."""
        return [v for v, _ in self.frequencies[table][column].most_common()]

    def column(self, table: str, name: str) -> Column:
        return next(c for c in TABLES[table] if c.name == name)


def _maybe(rng: random.Random, value: Any, null_rate: float) -> Any:
    return None if rng.random() < null_rate else value


def _hot(rng: random.Random, hot: Any, share: float, other) -> Any:
    return hot if rng.random() < share else other()


def _money(rng: random.Random) -> decimal.Decimal:
    return decimal.Decimal(rng.randint(0, 99999)) / 100


def _double(rng: random.Random) -> float:
    return rng.randint(-5000, 100000) / 100.0


def _day(rng: random.Random, span: int = 40) -> datetime.date:
    return DAY0 + datetime.timedelta(days=rng.randrange(span))


def _k(rng: random.Random) -> int:
    return rng.choice([k for k in range(1, 41) if k != HOT_K])


def build_data(seed: int = DEFAULT_SEED) -> FuzzData:
    """The rows of every table, as tuples in TABLES' column order."""
    rng = random.Random(seed)
    rows: dict[str, list[tuple]] = {}

    fact = []
    for i in range(1, 241):
        k = _maybe(rng, _hot(rng, HOT_K, 0.90, lambda: _k(rng)), 0.05)
        fact.append(
            (
                i,
                k,
                _maybe(rng, rng.choice(S_VALUES), 0.08),
                _maybe(rng, _day(rng), 0.05),
                _maybe(rng, rng.randrange(6), 0.05),
                _maybe(rng, rng.randrange(10), 0.05),
                _maybe(rng, rng.choice(DK_VALUES), 0.08),
                _maybe(rng, rng.choice(X_VALUES), 0.08),
                _maybe(rng, rng.randint(1, 50), 0.05),
                _maybe(rng, _money(rng), 0.08),
                _maybe(rng, _double(rng), 0.08),
            )
        )
    rows["fact"] = fact

    fact2 = []
    for i in range(1, 201):
        k = _maybe(rng, _hot(rng, HOT_K, 0.85, lambda: _k(rng)), 0.05)
        s = _maybe(rng, _hot(rng, HOT_S, 0.85, lambda: rng.choice(S_VALUES)), 0.05)
        fact_id = _maybe(rng, rng.randint(1, 260), 0.05)  # some ids match no fact row
        v = float("nan") if i == 17 else _maybe(rng, _double(rng), 0.08)
        fact2.append(
            (
                1000 + i,
                fact_id,
                k,
                s,
                _maybe(rng, _day(rng), 0.05),
                _maybe(rng, rng.randrange(6), 0.05),
                _maybe(rng, rng.randint(1, 50), 0.05),
                _maybe(rng, _money(rng), 0.08),
                v,
            )
        )
    rows["fact2"] = fact2

    part_f = []
    for i in range(1, 181):
        p = _hot(rng, HOT_P, 0.85, lambda: rng.randrange(1, 10))  # partition values are never NULL here
        if i == 5:
            p = None  # ... but one row sits in the __HIVE_DEFAULT_PARTITION__
        part_f.append(
            (
                2000 + i,
                _maybe(rng, rng.randint(1, 40), 0.05),
                _maybe(rng, rng.choice(S_VALUES), 0.08),
                _maybe(rng, _day(rng), 0.05),
                _maybe(rng, rng.randint(1, 50), 0.05),
                _maybe(rng, _money(rng), 0.08),
                _maybe(rng, _double(rng), 0.08),
                p,
            )
        )
    rows["part_f"] = part_f

    # Dimensions: unique keys but a couple of duplicates (never of a hot key) and a NULL key.
    dim_k = []
    for k in list(range(1, 41)) + [11, 23, None]:
        dim_k.append(
            (
                k,
                rng.choice(["Ann", "O'Hara", "Zoë", "back\\", "Bob"]) + str(rng.randrange(5)),
                _maybe(rng, rng.randrange(6), 0.05),
                rng.choice(X_VALUES),
                _maybe(rng, rng.choice(DK_VALUES), 0.05),
                rng.randint(1, 9),
            )
        )
    rows["dim_k"] = dim_k

    dim_s = []
    for s in [v for v in S_VALUES if v != "zz"] + ["plain", None, "only here"]:
        dim_s.append(
            (s, rng.choice(["red", "green", "blue", "it''s"]), _maybe(rng, rng.randrange(6), 0.05), rng.randint(1, 9))
        )
    rows["dim_s"] = dim_s

    dim_d = []
    for offset in list(range(-3, 40)) + [10]:
        day = DAY0 + datetime.timedelta(days=offset)
        dim_d.append((day, day.year, day.month, day.isocalendar()[1], offset % 10 if offset != 20 else None))
    rows["dim_d"] = dim_d + [(None, 2024, 1, 1, 3)]

    rows["dim_p"] = [
        (p, rng.choice(["EU", "US", "APAC", "it's"]), _maybe(rng, rng.randrange(6), 0.1))
        for p in [0, 1, 2, 3, 4, 5, 5, 6, 7, 9, None]
    ]
    rows["dim_g"] = [(g, f"group {g}", rng.randint(1, 9)) for g in [0, 1, 2, 3, 4, 5, 2]]

    orders = []
    for i in range(1, 61):
        orders.append(
            (
                i,
                _maybe(rng, rng.randint(1, 40), 0.05),
                _maybe(rng, rng.randrange(6), 0.05),
                _maybe(rng, _day(rng), 0.05),
                _maybe(rng, rng.choice(S_VALUES), 0.05),
                rng.randint(1, 9),
            )
        )
    rows["orders"] = orders
    lines = []
    for i in range(1, 241):
        lines.append(
            (
                5000 + i,
                _maybe(rng, rng.randint(1, 64), 0.04),
                _maybe(rng, rng.randint(1, 50), 0.05),
                _maybe(rng, _money(rng), 0.06),
                _maybe(rng, _double(rng), 0.06),
            )
        )
    rows["lines"] = lines

    # The boolean columns, last in their tables, from a generator of their own: the other columns'
    # values stay what they were before these columns existed.
    flags = random.Random(seed + 1)
    for table, true_share, null_rate in (("fact", 0.3, 0.1), ("dim_k", 0.7, 0.05), ("orders", 0.4, 0.1)):
        rows[table] = [(*row, _maybe(flags, flags.random() < true_share, null_rate)) for row in rows[table]]

    data = FuzzData(seed=seed, rows=rows)
    for table, cols in TABLES.items():
        data.frequencies[table] = {
            c.name: Counter(r[i] for r in rows[table] if r[i] is not None and r[i] == r[i])  # NaN never matches
            for i, c in enumerate(cols)
        }
    return data


def _ddl(table: str) -> str:
    return ", ".join(f"`{c.name}` {c.type}" for c in TABLES[table])


_WRITTEN: dict[tuple[str, int], bool] = {}


def create_tables(spark, data: FuzzData) -> None:
    """Write every table as Parquet into database `fuzz`, once per SparkSession and seed."""
    key = (spark.sparkContext.applicationId, data.seed)
    if _WRITTEN.get(key):
        return
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    for table in TABLES:
        frame = spark.createDataFrame(data.rows[table], _ddl(table))
        writer = frame.coalesce(1).write.mode("overwrite").format("parquet")
        if table in PARTITIONED:
            writer = writer.partitionBy(*PARTITIONED[table])
        spark.sql(f"DROP TABLE IF EXISTS {DATABASE}.{table}")
        writer.saveAsTable(f"{DATABASE}.{table}")
    _WRITTEN[key] = True


def check_tables(spark, data: FuzzData) -> list[str]:
    """Problems between the tables in Spark and the data (row counts, column order and types)."""
    problems = []
    for table, cols in TABLES.items():
        frame = spark.table(f"{DATABASE}.{table}")
        names = [f.name for f in frame.schema.fields]
        if names != [c.name for c in cols]:
            problems.append(f"{table}: columns {names}")
        count = frame.count()
        if count != len(data.rows[table]):
            problems.append(f"{table}: {count} rows, expected {len(data.rows[table])}")
    return problems
