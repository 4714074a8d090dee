"""The correlation rules on Spark, on data made to break them: NULL keys, duplicate rows, keys that
only one sibling (or no filter) sees, a store without sales, a region that is NULL. Every fixture
where a rule fires returns the same rows both ways, and Spark's plan reads the input fewer times."""

import random
import re
from collections import Counter

import pytest

from dbt.adapters.hiveopt.optimizer import optimize
from helpers.fixtures import context_for, load_cases, load_sets
from helpers.results import rows_of

pytestmark = pytest.mark.spark

RULES = ("merge_correlated_aggregates", "merge_sibling_aggregates")
FIRING = [c for rule in RULES for c in load_cases(rule) if c.expected is not None]


def _sales():
    rng = random.Random(11)
    rows = []
    for _ in range(400):
        item = rng.choice([0, 1, 2, 3, 4, 5, 8, 9, None])
        rows.append((item, rng.choice([1, 2, 3, 4]), rng.randint(0, 120), float(rng.choice([1, 2.5, 7, 10, 40])),
                     rng.randint(0, 16)))
    rows += [(7, 1, 2, 5.0, 1)] * 3          # a key no filter of the fixtures keeps (day <= 3, store 1)
    rows += [(6, 2, 1, 9.0, 3)] * 2          # a key only the `store = 2` sibling sees
    rows += [(None, 2, 50, 3.0, 7)] * 4      # NULL keys in both siblings
    rows += rows[:30]                        # duplicate rows
    return rows


def _orders():
    rng = random.Random(12)
    rows = [(order, rng.choice([1, 2, 3, 4, 5, 6, 7, 8, None]), rng.choice(["EU", "US", None])) for order in range(1, 61)]
    rows += [(5, 2, "EU"), (None, 3, "EU"), (None, None, "US")]  # a duplicate order id, NULL order ids
    return rows


def _lines():
    rng = random.Random(13)
    rows = [(rng.choice(list(range(1, 66)) + [None]), float(rng.choice([1, 2.5, 7, 10, 40]))) for _ in range(300)]
    return rows + rows[:20]  # duplicate rows; ids 61-65 have no order, some orders no line


@pytest.fixture(scope="module")
def corr_tables(spark):
    schema = load_sets()["corr"]["schema"]["corr"]
    spark.sql("CREATE DATABASE IF NOT EXISTS corr")
    data = {
        "sales": _sales(),
        "stores": [(1, "EU"), (2, "EU"), (3, None), (4, "US"), (5, "EU")],
        "items": [(i, f"b{i % 3}") for i in range(10)] + [(None, "b1")],
        "t1": [(k, float(v), "x") for k, v in [(1, 2), (1, 4), (2, 3), (None, 9), (None, 1), (3, 3), (3, 3)]],
        "orders": _orders(),
        "lines": _lines(),
    }
    for table, rows in data.items():
        ddl = ", ".join(f"`{c}` {t}" for c, t in schema[table].items())
        spark.createDataFrame(rows, ddl).write.mode("overwrite").saveAsTable(f"corr.{table}")
    return spark


def _scans(spark, sql, table=r"\w+"):
    plan = spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
    return len(re.findall(rf"(?:FileScan|Scan) \w+ spark_catalog\.corr\.{table}\b", plan))


@pytest.mark.parametrize("case", FIRING, ids=str)
def test_same_rows_and_fewer_scans(corr_tables, case):
    spark = corr_tables
    result = optimize(case.sql, context_for(case, only_rule=case.rule))
    assert case.rule in result.fired_rules
    assert spark.sql(result.sql).columns == spark.sql(case.sql).columns
    expected = Counter(rows_of(spark, case.sql))
    assert Counter(rows_of(spark, result.sql)) == expected
    assert _scans(spark, result.sql) < _scans(spark, case.sql)


def test_the_data_exercises_the_firing_cases(corr_tables):
    """Most firing cases must return rows, and some must meet NULL keys and keys of one sibling."""
    spark = corr_tables
    non_empty = [c for c in FIRING if spark.sql(c.sql).limit(1).count() > 0]
    assert len(non_empty) >= len(FIRING) - 1, [str(c) for c in FIRING if c not in non_empty]
    assert spark.sql("SELECT COUNT(*) AS n FROM corr.sales WHERE item IS NULL").collect()[0].n > 0
    only_b = "SELECT COUNT(*) AS n FROM corr.sales WHERE item = 6 AND store = 2 AND day <= 3"
    assert spark.sql(only_b).collect()[0].n > 0


def test_null_keys_of_a_correlated_scalar_subquery(corr_tables):
    """A row whose correlation key is NULL gets NULL from the subquery (no row matches), not the
    aggregate of the other NULL-key rows: the window's CASE keeps that."""
    spark = corr_tables
    case = next(c for c in load_cases("merge_correlated_aggregates") if c.title.startswith("TPC-DS q1 shape"))
    subquery = "(SELECT 1.2 * AVG(t2.total) FROM ototals t2 WHERE t2.customer = t1.customer)"
    sql = case.sql.replace(f"WHERE t1.total > {subquery}", f"WHERE COALESCE(t1.total > {subquery}, TRUE)")
    assert sql != case.sql
    result = optimize(sql, context_for(case, only_rule=case.rule))
    assert result.fired_rules == ["merge_correlated_aggregates"]
    expected = Counter(rows_of(spark, sql))
    assert Counter(rows_of(spark, result.sql)) == expected
    null_customer = spark.sql("SELECT COUNT(*) AS n FROM corr.lines l JOIN corr.orders o ON l.order_id = o.order_id "
                              "WHERE o.customer IS NULL").collect()[0].n
    assert null_customer > 0
