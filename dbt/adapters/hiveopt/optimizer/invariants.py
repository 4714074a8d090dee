"""Checks run after every rule: the output columns and their order are unchanged and the tree is
well formed (parent links intact). Once at the end, the generated SQL must parse again.

>>> import sqlglot
>>> check_invariants(sqlglot.parse_one("SELECT a AS x FROM t"), ["x"])
>>> check_invariants(sqlglot.parse_one("SELECT a AS y FROM t"), ["x"])  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
...
dbt.adapters.hiveopt.optimizer.invariants.InvariantViolation: output columns changed: ['x'] -> ['y']
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.prepare import output_names


class InvariantViolation(AssertionError):
    pass


def check_invariants(expression: exp.Expression, expected_names: list[str]) -> None:
    names = output_names(expression)
    if names != expected_names:
        raise InvariantViolation(f"output columns changed: {expected_names} -> {names}")
    for node in expression.walk():
        for child in node.iter_expressions():
            if child.parent is not node:
                raise InvariantViolation(f"broken parent link under {type(node).__name__}")


def generate_checked(expression: exp.Expression) -> str:
    """The SQL of the final tree, which must parse again (with the same output names)."""
    sql = expression.sql(DIALECT)
    try:
        reparsed = sqlglot.parse_one(sql, read=DIALECT)
    except sqlglot.errors.SqlglotError as error:
        raise InvariantViolation(f"generated SQL does not parse: {error}") from error
    if output_names(reparsed) != output_names(expression):
        raise InvariantViolation("generated SQL names its output columns differently")
    return sql
