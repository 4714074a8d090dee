"""Small generated tables for equivalence runs: every column draws from a small domain (so keys
repeat and match across tables), about one value in eight is NULL, and the literals the fixtures
filter on are in the domain (so filters select rows)."""

from __future__ import annotations

import datetime
import decimal
import random
from collections.abc import Iterable

import sqlglot
from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT

INT_TYPES = ("int", "bigint", "smallint", "tinyint")


def literals(sqls: Iterable[str]) -> dict[str, list]:
    numbers, strings = set(), set()
    for sql in sqls:
        for literal in sqlglot.parse_one(sql, read=DIALECT).find_all(exp.Literal):
            if literal.is_string:
                strings.add(literal.this)
            else:
                try:
                    numbers.add(int(literal.this))
                except ValueError:
                    pass
    return {"numbers": sorted(numbers), "strings": sorted(strings)}


def create_tables(
    spark, schema: dict[str, dict[str, dict[str, str]]], found: dict[str, list], rows: int = 120, seed: int = 7
) -> None:
    rng = random.Random(seed)
    ints = list(range(0, 12)) + [n for n in found["numbers"] if abs(n) < 10**6]
    strings = found["strings"] + ["zz", "it's", "back\\slash"]
    dates = [datetime.date(1994, 1, 1) + datetime.timedelta(days=45 * k) for k in range(16)]
    for text in found["strings"]:
        try:
            dates.append(datetime.date.fromisoformat(text))
        except ValueError:
            pass
    for db, tables in schema.items():
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
        for table, columns in tables.items():
            data = []
            for _ in range(rows):
                row = []
                for data_type in columns.values():
                    if rng.random() < 0.125:
                        row.append(None)
                    elif data_type in INT_TYPES:
                        row.append(rng.choice(ints))
                    elif data_type == "date":
                        row.append(rng.choice(dates))
                    elif data_type == "double":
                        row.append(float(rng.choice(ints)) + rng.choice([0.0, 0.5]))
                    elif data_type.startswith("decimal"):
                        row.append(
                            decimal.Decimal(rng.choice(ints))
                            + decimal.Decimal(rng.choice(["0", "0.01", "0.05", "0.5"]))
                        )
                    else:
                        row.append(rng.choice(strings))
                data.append(tuple(row))
            ddl = ", ".join(f"`{c}` {t}" for c, t in columns.items())
            spark.createDataFrame(data, ddl).write.mode("overwrite").saveAsTable(f"{db}.{table}")
