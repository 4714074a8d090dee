"""Spark SQL the optimizer may not know well: each query is rewritten, left unchanged or refused
as recorded below (a change of outcome fails, so "everything falls back" cannot pass), and
whatever runs returns the same rows and column names as the SQL as written."""

from collections import Counter

import pytest
from helpers.data import create_tables, literals
from helpers.fixtures import load_sets
from helpers.results import rows_of

from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, StatsCatalog, optimize

pytestmark = pytest.mark.spark

# (SQL, what the optimizer must do with it): rewritten (a rule fired and Spark returns the same rows),
# unchanged (no rule fired: the text as written runs), or falls back (the optimizer refuses it).
EXOTIC = [
    # TPC-DS q41's shape: DISTINCT of a parenthesized column ordered by its name.
    (
        "SELECT DISTINCT (p.brand) FROM shop.dim_product p JOIN shop.fact_sales f ON f.product_key = "
        "p.product_key ORDER BY brand LIMIT 5",
        "rewritten",
    ),
    (
        "SELECT f.sale_id, x.v FROM shop.fact_sales f JOIN shop.dim_store s ON f.store_key = s.store_key "
        "LATERAL VIEW explode(array(1, 2)) x AS v",
        "rewritten",
    ),
    (
        "SELECT s.region, f.amount, rank() OVER (PARTITION BY s.region ORDER BY f.amount DESC) AS r FROM "
        "shop.fact_sales f JOIN shop.dim_store s ON f.store_key = s.store_key",
        "rewritten",
    ),
    (
        "SELECT s.region, d.year, SUM(f.amount) AS total FROM shop.fact_sales f JOIN shop.dim_store s ON "
        "f.store_key = s.store_key JOIN shop.dim_date d ON d.date_key = f.date_key GROUP BY GROUPING "
        "SETS ((s.region), (d.year), ())",
        "rewritten",
    ),
    (
        "SELECT s.region, SUM(f.amount) AS total FROM shop.fact_sales f JOIN shop.dim_store s ON "
        "f.store_key = s.store_key GROUP BY ROLLUP (s.region)",
        "rewritten",
    ),
    (
        "SELECT f.sale_id FROM shop.fact_sales f WHERE f.store_key IN (SELECT s.store_key FROM "
        "shop.dim_store s WHERE s.region = 'EU') AND EXISTS (SELECT 1 FROM shop.dim_date d WHERE "
        "d.date_key = f.date_key)",
        "unchanged",
    ),
    (
        "SELECT /*+ REPARTITION(3) */ f.sale_id, s.region FROM shop.fact_sales f JOIN shop.dim_store s "
        "ON f.store_key = s.store_key WHERE s.region = 'it''s'",
        "rewritten",
    ),
    (
        "SELECT f.sale_id, v.label FROM shop.fact_sales f JOIN (VALUES (1, 'one'), (2, 'two')) AS v(k, "
        "label) ON v.k = f.store_key",
        "unchanged",
    ),
    (
        "SELECT named_struct('a', f.sale_id, 'b', s.region).b AS region_again FROM shop.fact_sales f "
        "JOIN shop.dim_store s ON f.store_key = s.store_key",
        "rewritten",
    ),
    (
        "SELECT CASE WHEN s.region = 'EU' THEN 'e' WHEN s.region IS NULL THEN 'n' ELSE 'o' END AS c, "
        "COUNT(*) AS n FROM shop.fact_sales f LEFT JOIN shop.dim_store s ON f.store_key = s.store_key "
        "GROUP BY 1",
        "rewritten",
    ),
    (
        "WITH a AS (SELECT store_key FROM shop.dim_store WHERE region = 'EU' UNION ALL SELECT store_key "
        "FROM shop.dim_store WHERE region = 'US') SELECT f.sale_id FROM shop.fact_sales f JOIN a ON "
        "a.store_key = f.store_key",
        "rewritten",
    ),
    (
        "SELECT * FROM (SELECT f.store_key, f.amount FROM shop.fact_sales f JOIN shop.dim_store s ON "
        "f.store_key = s.store_key) PIVOT (SUM(amount) FOR store_key IN (1, 2, 3))",
        "rewritten",
    ),
    (
        "SELECT f.sale_id, s.region FROM shop.fact_sales f FULL OUTER JOIN shop.dim_store s ON "
        "f.store_key = s.store_key AND f.amount > 2",
        "unchanged",
    ),
    (
        "SELECT f.sale_id, s.region FROM shop.fact_sales f CROSS JOIN shop.dim_store s WHERE s.region "
        "<=> 'EU' AND f.sale_id < 3",
        "unchanged",
    ),
    (
        "SELECT f.sale_id FROM shop.fact_sales f LEFT ANTI JOIN shop.dim_store s ON f.store_key = s.store_key",
        "rewritten",
    ),
    ("SELECT f.* , s.* FROM shop.fact_sales f JOIN shop.dim_store s USING (store_key)", "falls back"),
    # A boolean column alone as a filter reads its relation (aliases_of): it stays that relation's.
    (
        "SELECT f.sale_id, s.region FROM shop.fact_sales f JOIN (SELECT store_key, region, region = 'EU' "
        "AS is_eu FROM shop.dim_store) s ON f.store_key = s.store_key JOIN shop.dim_date d ON d.date_key = "
        "f.date_key WHERE s.is_eu AND NOT s.is_eu IS NULL AND d.year = 2020",
        "rewritten",
    ),
]


@pytest.fixture(scope="module")
def shop(spark):
    sets = load_sets()["star"]
    create_tables(spark, sets["schema"], literals([sql for sql, _ in EXOTIC[1:6]]))
    return spark, sets


@pytest.mark.parametrize("sql, outcome", EXOTIC)
def test_exotic_sql_keeps_its_results(shop, sql, outcome):
    spark, sets = shop
    # Statistics that make every small side a broadcast candidate, and a Spark told to broadcast
    # nothing by itself (the small sides are tiny on disk), so rules do fire where they can.
    stats = StatsCatalog.from_dict(sets["statistics"])
    config = OptimizerConfig(spark_broadcast_threshold_bytes=-1)
    result = optimize(sql, OptimizerContext(schema=sets["schema"], statistics=stats, config=config))
    assert [r.error for r in result.rules if r.error] == []
    if outcome == "falls back":
        assert result.fallback_reason and result.sql == sql
        return
    assert result.fallback_reason is None and result.changed == (outcome == "rewritten"), result.fired_rules
    assert spark.sql(result.sql).columns == spark.sql(sql).columns
    assert Counter(rows_of(spark, result.sql)) == Counter(rows_of(spark, sql))
