"""`verify` mode: run the original and the optimized SELECT and compare them as multisets.

The comparison runs in Spark: (A EXCEPT ALL B) UNION ALL (B EXCEPT ALL A) must be empty. EXCEPT ALL
counts duplicates and treats NULLs as equal, which is what "same results" means here. It runs as a
bounded statement (the adapter cancels it at verify_timeout_seconds).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import sqlglot
from dbt_common.exceptions import DbtRuntimeError
from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT


def _own_ctes(query: exp.Expression, prefix: str) -> exp.Expression:
    """The query with its CTEs renamed `<prefix>_<name>`: composing the two sides into one
    statement hoists both sides' WITH clauses into one, where a CTE both define (the optimizer
    keeps the model's CTE names) would be a duplicate name, which Spark rejects.

    >>> q = sqlglot.parse_one("WITH p AS (SELECT k FROM t) SELECT k FROM p JOIN db.p ON TRUE", read=DIALECT)
    >>> _own_ctes(q, "a").sql(DIALECT)
    'WITH a_p AS (SELECT k FROM t) SELECT k FROM a_p JOIN db.p ON TRUE'
    """
    names = {cte.alias_or_name for cte in query.find_all(exp.CTE)}
    for cte in query.find_all(exp.CTE):
        cte.set("alias", exp.TableAlias(this=exp.to_identifier(f"{prefix}_{cte.alias_or_name}")))
    for table in query.find_all(exp.Table):
        if not table.args.get("db") and table.name in names:
            table.set("this", exp.to_identifier(f"{prefix}_{table.name}"))
    return query


def difference_query(original_sql: str, optimized_sql: str) -> exp.Query:
    """The number of rows in which the two queries differ, as multisets.

    >>> sql = "WITH p AS (SELECT k FROM t) SELECT k FROM p"
    >>> print(difference_query(sql, sql).sql(DIALECT))  # doctest: +NORMALIZE_WHITESPACE
    WITH a_p AS (SELECT k FROM t), hiveopt_a AS (SELECT k FROM a_p), b_p AS (SELECT k FROM t),
    hiveopt_b AS (SELECT k FROM b_p) SELECT COUNT(*) AS differences FROM (SELECT * FROM (SELECT *
    FROM hiveopt_a EXCEPT ALL SELECT * FROM hiveopt_b) AS d1 UNION ALL SELECT * FROM (SELECT * FROM
    hiveopt_b EXCEPT ALL SELECT * FROM hiveopt_a) AS d2) AS d
    """
    a = _own_ctes(sqlglot.parse_one(original_sql, read=DIALECT), "a")
    b = _own_ctes(sqlglot.parse_one(optimized_sql, read=DIALECT), "b")
    # Each side once, as a CTE read twice: a side inlined twice would bring its own CTEs twice.
    a_minus_b = exp.select("*").from_("hiveopt_a").except_(exp.select("*").from_("hiveopt_b"), distinct=False)
    b_minus_a = exp.select("*").from_("hiveopt_b").except_(exp.select("*").from_("hiveopt_a"), distinct=False)
    both = exp.union(
        exp.select("*").from_(a_minus_b.subquery("d1")), exp.select("*").from_(b_minus_a.subquery("d2")), distinct=False
    )
    count = exp.select(exp.alias_(exp.Count(this=exp.Star()), "differences")).from_(both.subquery("d"))
    return count.with_("hiveopt_a", as_=a).with_("hiveopt_b", as_=b)


def verify_equal(run: Callable[[str], list[Any]], original_sql: str, optimized_sql: str, label: str) -> None:
    rows = run(difference_query(original_sql, optimized_sql).sql(DIALECT))
    differences = int(float(rows[0][0]))
    if differences:
        raise DbtRuntimeError(
            f"hiveopt verify: {label}: the optimized query returns different results "
            f"({differences} rows differ).\n-- original:\n{original_sql}\n-- optimized:\n{optimized_sql}"
        )


def verify_within(
    run_bounded: Callable[[str, float], list[Any]] | None,
    run: Callable[[str], list[Any]],
    original_sql: str,
    optimized_sql: str,
    label: str,
    timeout_seconds: float,
    warn: Callable[[str], None],
) -> None:
    """verify_equal, cancelled at `timeout_seconds` when the connection can cancel (run_bounded;
    None: unbounded). A comparison cancelled at its deadline leaves the model unverified, with a
    warning; results that differ raise."""
    deadline = time.perf_counter() + timeout_seconds
    runner = (lambda sql: run_bounded(sql, deadline)) if run_bounded is not None else run
    try:
        verify_equal(runner, original_sql, optimized_sql, label)
    except TimeoutError as error:
        warn(
            f"{label}: hiveopt verify: not compared ({error}; verify_timeout_seconds is "
            f"{timeout_seconds:g}): the build goes on unverified"
        )
