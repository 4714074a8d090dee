"""End to end on Spark: real statistics from the collector, the rule's hint, and Spark's plan.

The dimension's files are bigger than Spark's broadcast threshold, so Spark plans a sort-merge
join; after its filter only a few rows remain, which our estimate sees: with the rule Spark
plans a broadcast hash join. (Spark's threshold is lowered so the test data can stay small.)"""

from collections import Counter

import pytest
from helpers.results import rows_of

from dbt.adapters.hiveopt.optimizer import OptimizerContext, StatsCatalog, optimize
from dbt.adapters.hiveopt.statistics_service import StatisticsService

pytestmark = pytest.mark.spark

SQL = """
SELECT d.label, SUM(f.amount) AS total
FROM bp.fact f JOIN bp.dim d ON f.dim_id = d.dim_id
WHERE d.category = 'rare'
GROUP BY d.label
"""


@pytest.fixture(scope="module")
def tables(spark):
    spark.sql("CREATE DATABASE IF NOT EXISTS bp")
    spark.sql("DROP TABLE IF EXISTS bp.fact")
    spark.sql("DROP TABLE IF EXISTS bp.dim")
    spark.sql(
        "CREATE TABLE bp.fact USING parquet AS SELECT id, id % 20000 AS dim_id, CAST(id % 100 AS DOUBLE) AS "
        "amount FROM range(200000)"
    )
    spark.sql("""CREATE TABLE bp.dim USING parquet AS
                 SELECT id AS dim_id, IF(id % 1000 = 0, 'rare', 'common') AS category,
                        sha2(CAST(id AS STRING), 256) AS label FROM range(20000)""")
    service = StatisticsService(
        lambda sql: [tuple(r) for r in spark.sql(sql).collect()], stats_schema="hiveopt_test_bp"
    )
    stats = StatsCatalog()
    schema = {"bp": {}}
    for name in ("bp.fact", "bp.dim"):
        stats.put(name, service.gather(name, key_columns=["dim_id", "category"]).stats)
        schema["bp"][name.split(".")[1]] = service.describe(name).columns
    return schema, stats


def plan(spark, sql):
    return "\n".join(r[0] for r in spark.sql("EXPLAIN " + sql).collect())


def test_spark_plans_a_broadcast_join_only_with_the_rule(spark, tables):
    schema, stats = tables
    result = optimize(SQL, OptimizerContext(schema=schema, statistics=stats))
    assert "BROADCAST(d)" in result.sql
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(256 * 1024))
    try:
        dim_bytes = stats.get("bp.dim").size_bytes.value
        assert dim_bytes > 256 * 1024  # Spark's static rule sees the unfiltered files
        before, after = plan(spark, SQL), plan(spark, result.sql)
        assert "SortMergeJoin" in before and "BroadcastHashJoin" not in before
        assert "BroadcastHashJoin" in after and "SortMergeJoin" not in after
        assert Counter(rows_of(spark, SQL)) == Counter(rows_of(spark, result.sql))
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
