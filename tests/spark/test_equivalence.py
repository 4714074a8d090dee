"""Original and optimized SQL return the same rows on Spark, for every executable fixture: NULL
keys, duplicate keys and filter values in the data; output column names and order too."""

from collections import Counter

import pytest
from helpers.data import create_tables, literals
from helpers.fixtures import context_for, load_cases, load_sets
from helpers.results import rows_of

from dbt.adapters.hiveopt.optimizer import optimize
from dbt.adapters.hiveopt.optimizer.pipeline import RULE_NAMES

CASES = [c for rule in RULE_NAMES for c in load_cases(rule) if c.executable]

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def original_rows():
    """Rows of each fixture's original SQL, as test_same_results counted them: the data check
    reads them rather than running every fixture again (45 s of the suite)."""
    return {}


@pytest.fixture(scope="module")
def fixture_tables(spark):
    for name, sets in load_sets().items():
        sqls = [c.sql for c in CASES if c.stats == name]
        create_tables(spark, sets["schema"], literals(sqls))
    return spark


@pytest.mark.parametrize("case", CASES, ids=str)
def test_same_results(fixture_tables, original_rows, case):
    spark = fixture_tables
    result = optimize(case.sql, context_for(case))
    assert result.fallback_reason is None
    original, optimized = spark.sql(case.sql), spark.sql(result.sql)
    assert optimized.columns == original.columns
    # Same types too (a table built from the optimized SQL has the original's schema); nullability
    # aside, which a CTAS drops.
    assert [f.dataType for f in optimized.schema.fields] == [f.dataType for f in original.schema.fields]
    expected = Counter(rows_of(spark, case.sql))
    original_rows[case.sql] = sum(expected.values())
    assert Counter(rows_of(spark, result.sql)) == expected


def test_the_data_exercises_the_fixtures(fixture_tables, original_rows):
    """Equivalence on empty results proves little: most fixtures must return rows. (A fixture that
    test_same_results did not run, as under `-k`, is run here.)"""

    def rows(case):
        if case.sql not in original_rows:
            original_rows[case.sql] = fixture_tables.sql(case.sql).limit(1).count()
        return original_rows[case.sql]

    non_empty = [c for c in CASES if rows(c) > 0]
    assert len(non_empty) >= 0.8 * len(CASES), [str(c) for c in CASES if c not in non_empty]


@pytest.mark.parametrize("title", ["cycle", "bushy tree 1.4x"])
def test_bushy_trees_as_nested_joins_keep_results(fixture_tables, monkeypatch, title):
    """With the bushy margin at 1, these blocks are written as nested joins `(a JOIN b ON ...)`."""
    from dbt.adapters.hiveopt.optimizer.rules import reorder_joins

    monkeypatch.setattr(reorder_joins, "BUSHY_MIN_GAIN", 1.0)
    (case,) = [c for c in load_cases("reorder_joins") if title in c.title]
    result = optimize(case.sql, context_for(case))
    assert "JOIN (" in result.sql
    spark = fixture_tables
    assert Counter(rows_of(spark, result.sql)) == Counter(rows_of(spark, case.sql))
