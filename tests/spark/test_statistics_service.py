"""The statistics service on real Spark tables: what one pass gathers, where it is stored,
freshness, and precision (absent is never zero)."""

import pytest

from dbt.adapters.hiveopt.optimizer.statistics import Precision
from dbt.adapters.hiveopt.statistics_service import StatisticsService

pytestmark = pytest.mark.spark


def service(spark, schema="hiveopt_test_stats"):
    return StatisticsService(lambda sql: [tuple(r) for r in spark.sql(sql).collect()], stats_schema=schema)


@pytest.fixture(scope="module")
def stats_table(spark):
    spark.sql("CREATE DATABASE IF NOT EXISTS st")
    spark.sql("DROP TABLE IF EXISTS st.events")
    spark.sql("""
        CREATE TABLE st.events USING parquet AS
        SELECT id, CASE WHEN id % 10 < 9 THEN 7 ELSE id % 97 END AS hot_key,
               IF(id % 5 = 0, NULL, concat('name-', CAST(id % 50 AS STRING))) AS name,
               date_add(DATE '2024-01-01', CAST(id % 366 AS INT)) AS day
        FROM range(20000)
    """)
    return "st.events"


def test_one_pass_gathers_counts_ndv_nulls_ranges_and_key_detail(spark, stats_table):
    result = service(spark).gather(stats_table, key_columns=["hot_key", "day"])
    stats = result.stats
    assert stats.row_count.value == 20000 and stats.row_count.precision == Precision.EXACT
    assert stats.size_bytes.value > 0
    name = stats.column("name")
    assert name.null_count.value == 4000 and name.null_count.precision == Precision.EXACT
    assert name.ndv.value == pytest.approx(40, rel=0.1) and name.ndv.precision == Precision.ESTIMATED
    assert 6 <= name.avg_width.value <= 7
    day = stats.column("day")
    assert (day.min, day.max) == ("2024-01-01", "2024-12-31")
    assert len(day.histogram) == 33
    hot = stats.column("hot_key")
    assert hot.heavy_hitters[0][0] == 7 and hot.heavy_hitters[0][1] >= 18000
    assert stats.column("id").heavy_hitters is None  # not a key column: no detail gathered


def test_statistics_are_shared_through_the_warehouse(spark, stats_table):
    service(spark).gather(stats_table)
    fresh = service(spark)  # another machine / run: nothing in memory
    stats, state = fresh.current(stats_table)
    assert state == "current" and stats.row_count.value == 20000


def test_a_changed_table_is_stale_and_gathered_again(spark, stats_table):
    spark.sql("CREATE TABLE IF NOT EXISTS st.growing USING parquet AS SELECT id FROM range(100)")
    first = service(spark)
    first.gather("st.growing")
    spark.sql("INSERT INTO st.growing SELECT id FROM range(100, 250)")
    later = service(spark)
    stats, state = later.current("st.growing")
    assert stats is None and state.startswith("stale")
    stats, state, seconds = later.ensure("st.growing")
    assert state == "gathered" and stats.row_count.value == 250 and seconds > 0


def test_never_analyzed_table_has_absent_not_zero_rows(spark):
    spark.sql("CREATE TABLE IF NOT EXISTS st.untouched (a INT) USING parquet")
    spark.sql("INSERT INTO st.untouched VALUES (1), (2)")
    s = service(spark, schema="hiveopt_test_empty_store")
    stats, state = s.current("st.untouched")
    assert stats is None and state == "never gathered"
    stats, state, _ = s.ensure("st.untouched", auto_gather=False)
    assert stats is None and "automatic gathering is off" in state


def test_views_have_no_statistics(spark, stats_table):
    spark.sql("CREATE OR REPLACE VIEW st.events_v AS SELECT * FROM st.events")
    stats, state, _ = service(spark).ensure("st.events_v")
    assert stats is None and state.startswith("view")


def test_values_with_quotes_are_stored_as_literals(spark):
    spark.sql("DROP TABLE IF EXISTS st.quotes")
    spark.sql("""CREATE TABLE st.quotes USING parquet AS SELECT * FROM VALUES ('it''s'), ('back\\\\slash'), ('it''s') AS t(s)""")
    s = service(spark)
    s.gather("st.quotes", key_columns=["s"])
    stats, state = service(spark).current("st.quotes")
    assert state == "current"
    assert dict(stats.column("s").heavy_hitters)["it's"] == 2
    assert "back\\slash" in dict(stats.column("s").heavy_hitters)


def test_a_store_of_many_files_is_compacted_on_load(spark):
    """Each save appends a file; a run's first model waits for reading them all, so a load that
    finds more than COMPACT_AFTER_FILES rewrites the store with the latest row per table."""
    from dbt.adapters.hiveopt.statistics_service import COMPACT_AFTER_FILES

    schema = "hiveopt_test_compact"
    spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")
    spark.sql("CREATE DATABASE IF NOT EXISTS st")
    spark.sql("CREATE TABLE IF NOT EXISTS st.small USING parquet AS SELECT id FROM range(10)")
    writer = service(spark, schema)
    for _ in range(COMPACT_AFTER_FILES + 2):
        writer.gather("st.small")
    files = f"SELECT COUNT(DISTINCT f) AS n FROM (SELECT input_file_name() AS f FROM {schema}.statistics)"
    assert spark.sql(files).collect()[0].n > COMPACT_AFTER_FILES
    stats, state = service(spark, schema).current("st.small")
    assert state == "current" and stats.row_count.value == 10
    assert spark.sql(files).collect()[0].n <= 2
    assert spark.sql(f"SELECT COUNT(*) AS n FROM {schema}.statistics").collect()[0].n == 1
    again, _ = service(spark, schema).current("st.small")
    assert again.row_count.value == 10 and again.fingerprint == stats.fingerprint
