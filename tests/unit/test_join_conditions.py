"""Inner joins' equi-conditions written in WHERE move to their ON (join_conditions.py): the same
joins to every rule whatever the syntax, and nothing moves where it could change the rows."""

import pytest
import sqlglot

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.join_conditions import conditions_into_on
from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog


def moved(sql: str) -> str:
    return conditions_into_on(sqlglot.parse_one(sql, read=DIALECT)).sql(DIALECT)


@pytest.mark.parametrize(
    "sql, expected",
    [
        # comma joins: each key goes to the join where its second relation enters
        (
            "SELECT * FROM a, b, c WHERE c.j = a.j AND a.k = b.k",
            "SELECT * FROM a JOIN b ON a.k = b.k JOIN c ON c.j = a.j",
        ),
        # conditions split between ON and WHERE end in one ON
        (
            "SELECT * FROM a JOIN b ON a.k = b.k WHERE a.j = b.j AND b.v = 1",
            "SELECT * FROM a JOIN b ON a.k = b.k AND a.j = b.j WHERE b.v = 1",
        ),
        # a key every branch of an OR repeats is a key (TPC-H Q19), the rest of the OR stays
        (
            "SELECT * FROM a, b WHERE (a.k = b.k AND a.v = 1) OR (b.k = a.k AND a.v = 2 AND b.w = 3)",
            "SELECT * FROM a JOIN b ON a.k = b.k WHERE a.v = 1 OR (a.v = 2 AND b.w = 3)",
        ),
        # CROSS JOIN with its key in WHERE is the inner join on it
        ("SELECT * FROM a CROSS JOIN b WHERE a.k = b.k", "SELECT * FROM a JOIN b ON a.k = b.k"),
        # a key between a relation of an earlier LEFT join and a later inner one: same rows in ON
        (
            "SELECT * FROM a LEFT JOIN b ON a.k = b.k, c WHERE b.x = c.x",
            "SELECT * FROM a LEFT JOIN b ON a.k = b.k JOIN c ON b.x = c.x",
        ),
    ],
)
def test_inner_join_keys_move_to_on(sql, expected):
    assert moved(sql) == expected


@pytest.mark.parametrize(
    "sql",
    [
        # a WHERE key on a LEFT join's null-supplying side removes its NULL rows: not an ON
        "SELECT * FROM a LEFT JOIN b ON a.k = b.k WHERE a.j = b.j",
        # RIGHT and FULL joins add rows with NULLs that a WHERE condition removes
        "SELECT * FROM a, b RIGHT JOIN c ON b.k = c.k WHERE a.k = b.k",
        "SELECT * FROM a JOIN b ON a.k = b.k FULL JOIN c ON b.k = c.k WHERE a.j = b.j",
        # not an equality of two columns of two relations
        "SELECT * FROM a, b WHERE a.k = b.k + 1 AND a.v = 1 AND a.k = a.j",
        # a correlated condition reads the outer query: it stays
        "SELECT * FROM a WHERE EXISTS (SELECT 1 FROM b, c WHERE b.k = a.k AND c.v = 1)",
        # an OR with a branch that has no key; one that would be left with nothing but the key;
        # one whose rand() would be called another number of times once the key is out
        "SELECT * FROM a, b WHERE (a.k = b.k AND a.v = 1) OR b.w = 2",
        "SELECT * FROM a, b WHERE a.k = b.k OR (a.k = b.k AND b.w = 2)",
        "SELECT * FROM a, b WHERE (a.k = b.k AND rand() < 0.5) OR (a.k = b.k AND b.w = 2)",
    ],
)
def test_nothing_moves_where_rows_could_change(sql):
    assert moved(sql) == sqlglot.parse_one(sql, read=DIALECT).sql(DIALECT)


def test_the_estimate_is_the_same_for_both_syntaxes():
    schema = {"db": {"t": {"k": "int", "v": "int"}, "u": {"k": "int"}}}
    stats = StatsCatalog.from_dict(
        {
            "db.t": {"row_count": 1000, "columns": {"k": {"ndv": 100}, "v": {"ndv": 10}}},
            "db.u": {"row_count": 50, "columns": {"k": {"ndv": 50}}},
        }
    )
    rows = []
    for sql in ("SELECT t.v FROM db.t, db.u WHERE t.k = u.k", "SELECT t.v FROM db.t JOIN db.u ON t.k = u.k"):
        expression = prepare_query(sql, schema).expression
        assert expression.sql(DIALECT) == "SELECT t.v AS v FROM db.t AS t JOIN db.u AS u ON t.k = u.k"
        rows.append(Estimator(expression, schema, stats).estimate(expression).rows.value)
    assert rows[0] == rows[1] == pytest.approx(500)
