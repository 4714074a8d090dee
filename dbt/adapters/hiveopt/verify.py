"""`verify` mode: run the original and the optimized SELECT and compare them as multisets.

The comparison runs in Spark: (A EXCEPT ALL B) UNION ALL (B EXCEPT ALL A) must be empty. EXCEPT ALL
counts duplicates and treats NULLs as equal, which is what "same results" means here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlglot
from dbt_common.exceptions import DbtRuntimeError
from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT


def difference_query(original_sql: str, optimized_sql: str) -> exp.Query:
    a = sqlglot.parse_one(original_sql, read=DIALECT).subquery("hiveopt_a")
    b = sqlglot.parse_one(optimized_sql, read=DIALECT).subquery("hiveopt_b")
    a_minus_b = exp.select("*").from_(a.copy()).except_(exp.select("*").from_(b.copy()), distinct=False)
    b_minus_a = exp.select("*").from_(b).except_(exp.select("*").from_(a), distinct=False)
    both = exp.union(
        exp.select("*").from_(a_minus_b.subquery("d1")), exp.select("*").from_(b_minus_a.subquery("d2")), distinct=False
    )
    return exp.select(exp.alias_(exp.Count(this=exp.Star()), "differences")).from_(both.subquery("d"))


def verify_equal(run: Callable[[str], list[Any]], original_sql: str, optimized_sql: str, label: str) -> None:
    rows = run(difference_query(original_sql, optimized_sql).sql(DIALECT))
    differences = int(float(rows[0][0]))
    if differences:
        raise DbtRuntimeError(
            f"hiveopt verify: {label}: the optimized query returns different results "
            f"({differences} rows differ).\n-- original:\n{original_sql}\n-- optimized:\n{optimized_sql}"
        )
