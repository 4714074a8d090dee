"""The result types spark_types predicts for SUM and AVG are the ones Spark gives: a rule that
rebuilds an aggregate from partial results casts it back to them."""

import decimal

import pytest
import sqlglot

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.spark_types import avg_type, expression_type, sum_type

pytestmark = pytest.mark.spark

COLUMNS = {"p": "decimal(15,2)", "d": "decimal(15,2)", "w": "decimal(30,6)", "q": "int", "b": "bigint", "s": "smallint"}
EXPRESSIONS = [
    "p",
    "p * (1 - d)",
    "p + d",
    "p - 0.25",
    "1.5 * p",
    "q * p",
    "b * p",
    "s + p",
    "p * d * d",
    "w * w",
    "w + p",
    "CAST(p AS DECIMAL(30, 5)) * p",
    "q",
    "q * 2",
    "b + q",
    "-p",
    "(p + 100) * 3",
    "p * 12345678901",
]


@pytest.fixture(scope="module")
def typed_table(spark):
    spark.sql("CREATE DATABASE IF NOT EXISTS spark_types")
    ddl = ", ".join(f"{c} {t}" for c, t in COLUMNS.items())
    row = (decimal.Decimal("1.25"), decimal.Decimal("0.05"), decimal.Decimal("2.000001"), 3, 4, 5)
    spark.createDataFrame([row], ddl).write.mode("overwrite").saveAsTable("spark_types.t")
    return spark


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_predicted_types_are_sparks(typed_table, expression):
    typed = expression_type(sqlglot.parse_one(expression, read=DIALECT), lambda column: COLUMNS.get(column.name))
    schema = typed_table.sql(f"SELECT SUM({expression}) AS s, AVG({expression}) AS a FROM spark_types.t").schema
    assert sum_type(typed) == schema["s"].dataType.simpleString()
    if avg_type(typed) is not None:  # integral averages are doubles: no rule rebuilds them
        assert avg_type(typed) == schema["a"].dataType.simpleString()
