"""aliases_of (optimizer/syntax.py): the relations a predicate reads in its own block, which every
rule and the estimator use to tell a relation's own filters from join conditions."""

import pytest
import sqlglot

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.syntax import aliases_of


def where_of(sql: str) -> sqlglot.exp.Expression:
    """The WHERE condition of a parsed query: a predicate still inside its tree, as rules see it."""
    return sqlglot.parse_one(sql, read=DIALECT).args["where"].this


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("SELECT * FROM t JOIN u ON t.k = u.k WHERE t.v = u.v", {"t", "u"}),
        # a boolean column alone is a filter of its relation (it was read as no relation's, as if
        # it sat inside a subquery, when its tree had a query above it)
        ("SELECT * FROM t JOIN u ON t.k = u.k WHERE t.flag", {"t"}),
        ("SELECT * FROM t JOIN u ON t.k = u.k WHERE NOT u.flag", {"u"}),
        # a subquery's own columns are its block's; the outer ones it names are not counted either
        ("SELECT * FROM t WHERE t.k IN (SELECT u.k FROM u WHERE u.v = t.v)", {"t"}),
        ("SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k)", set()),
        ("SELECT * FROM t WHERE (SELECT MAX(u.v) FROM u) > t.v", {"t"}),
        ("SELECT * FROM t WHERE 1 = 1", set()),
    ],
)
def test_aliases_of(sql, expected):
    assert aliases_of(where_of(sql)) == expected


def test_a_query_as_the_predicate_counts_its_own_columns():
    query = sqlglot.parse_one("SELECT a.x FROM a WHERE a.y IN (SELECT b.y FROM b)", read=DIALECT)
    assert aliases_of(query) == {"a"}
