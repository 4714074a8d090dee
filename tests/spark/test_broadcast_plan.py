"""End to end on Spark: real statistics from the collector, the rule's hint, and Spark's plan.

The dimension's files are bigger than Spark's broadcast threshold, so Spark plans a sort-merge
join; after its filter only a few rows remain, which our estimate sees: with the rule Spark
plans a broadcast hash join. (Spark's threshold is lowered so the test data can stay small.)"""

from collections import Counter

import pytest
from helpers.results import rows_of

from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, StatsCatalog, optimize
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
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
    threshold = 256 * 1024  # Spark's, as the session below sets it and the optimizer is told
    config = OptimizerConfig(spark_broadcast_threshold_bytes=threshold)
    result = optimize(SQL, OptimizerContext(schema=schema, statistics=stats, config=config))
    assert "BROADCAST(d)" in result.sql
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(threshold))
    try:
        dim_bytes = stats.get("bp.dim").size_bytes.value
        assert dim_bytes > 256 * 1024  # Spark's static rule sees the unfiltered files
        before, after = plan(spark, SQL), plan(spark, result.sql)
        assert "SortMergeJoin" in before and "BroadcastHashJoin" not in before
        assert "BroadcastHashJoin" in after and "SortMergeJoin" not in after
        assert Counter(rows_of(spark, SQL)) == Counter(rows_of(spark, result.sql))
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def test_without_a_hint_when_spark_broadcasts_by_itself(spark, tables):
    """At Spark's default threshold the 20,000-row dimension is small enough on disk for Spark to
    broadcast it by itself: the rule records that and writes no hint, and Spark's plan of the
    query as written is the broadcast hash join the hint would have asked for."""
    schema, stats = tables
    result = optimize(SQL, OptimizerContext(schema=schema, statistics=stats))
    assert not result.changed
    (decision,) = [d for r in result.to_dict()["rules"] for d in r["decisions"] if d.get("relation") == "d"]
    assert decision["reason"].startswith("Spark does this already: it broadcasts d (bp.dim) by itself")
    assert "BroadcastHashJoin" in plan(spark, SQL) and "SortMergeJoin" not in plan(spark, SQL)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT d.dim_id FROM bp.dim AS d WHERE d.category = 'rare'",
        "SELECT d.dim_id, d.label FROM bp.dim AS d",
        "SELECT x.dim_id FROM (SELECT dim_id, COUNT(*) AS n FROM bp.fact GROUP BY dim_id) AS x",
        "SELECT x.id FROM (SELECT id FROM bp.fact LIMIT 100) AS x",
        "SELECT v.dim_id FROM bp.dim_v AS v",
        "SELECT f.id, d.label FROM bp.fact AS f JOIN bp.dim AS d ON f.dim_id = d.dim_id",
    ],
)
def test_spark_sizes_are_the_sizes_spark_plans_with(spark, tables, sql):
    """What spark_sizes.py says Spark sizes a query at is what Spark's optimized plan says: a
    table's size on disk scaled by the columns read, filters kept, aggregates and views seen
    through, LIMIT as its rows, a join as the product of its sides."""
    schema, stats = tables
    view_sql = "SELECT dim_id, label FROM bp.dim WHERE category = 'rare'"
    spark.sql(f"CREATE OR REPLACE VIEW bp.dim_v AS {view_sql}")
    from dbt.adapters.hiveopt.optimizer.view_statistics import view_statistics

    catalog = StatsCatalog({"bp.fact": stats.get("bp.fact"), "bp.dim": stats.get("bp.dim")})
    catalog.put("bp.dim_v", view_statistics(view_sql, schema, catalog))
    full = {"bp": {**schema["bp"], "dim_v": {"dim_id": "bigint", "label": "string"}}}
    expression = prepare_query(sql, full).expression
    ours, _ = Estimator(expression, full, catalog).spark_sizes.output(expression)
    theirs = float(str(spark.sql(sql)._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    assert ours == pytest.approx(theirs, rel=0.02), (ours, theirs)
