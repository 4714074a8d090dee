"""Spark SQL the optimizer may not know well: whatever it does, Spark must return the same rows
and column names as for the SQL as written (or the optimizer must fall back and say why)."""

from collections import Counter

import pytest
from helpers.data import create_tables, literals
from helpers.fixtures import load_sets
from helpers.results import rows_of

from dbt.adapters.hiveopt.optimizer import OptimizerContext, StatsCatalog, optimize

pytestmark = pytest.mark.spark

EXOTIC = [
    # TPC-DS q41's shape: DISTINCT of a parenthesized column ordered by its name.
    "SELECT DISTINCT (p.brand) FROM shop.dim_product p JOIN shop.fact_sales f ON f.product_key = p.product_key ORDER BY brand LIMIT 5",
    "SELECT f.sale_id, x.v FROM shop.fact_sales f JOIN shop.dim_store s ON f.store_key = s.store_key LATERAL VIEW explode(array(1, 2)) x AS v",
    "SELECT s.region, f.amount, rank() OVER (PARTITION BY s.region ORDER BY f.amount DESC) AS r FROM shop.fact_sales f JOIN shop.dim_store s ON f.store_key = s.store_key",
    "SELECT s.region, d.year, SUM(f.amount) AS total FROM shop.fact_sales f JOIN shop.dim_store s ON f.store_key = s.store_key JOIN shop.dim_date d ON d.date_key = f.date_key GROUP BY GROUPING SETS ((s.region), (d.year), ())",
    "SELECT s.region, SUM(f.amount) AS total FROM shop.fact_sales f JOIN shop.dim_store s ON f.store_key = s.store_key GROUP BY ROLLUP (s.region)",
    "SELECT f.sale_id FROM shop.fact_sales f WHERE f.store_key IN (SELECT s.store_key FROM shop.dim_store s WHERE s.region = 'EU') AND EXISTS (SELECT 1 FROM shop.dim_date d WHERE d.date_key = f.date_key)",
    "SELECT /*+ REPARTITION(3) */ f.sale_id, s.region FROM shop.fact_sales f JOIN shop.dim_store s ON f.store_key = s.store_key WHERE s.region = 'it''s'",
    "SELECT f.sale_id, v.label FROM shop.fact_sales f JOIN (VALUES (1, 'one'), (2, 'two')) AS v(k, label) ON v.k = f.store_key",
    "SELECT named_struct('a', f.sale_id, 'b', s.region).b AS region_again FROM shop.fact_sales f JOIN shop.dim_store s ON f.store_key = s.store_key",
    "SELECT CASE WHEN s.region = 'EU' THEN 'e' WHEN s.region IS NULL THEN 'n' ELSE 'o' END AS c, COUNT(*) AS n FROM shop.fact_sales f LEFT JOIN shop.dim_store s ON f.store_key = s.store_key GROUP BY 1",
    "WITH a AS (SELECT store_key FROM shop.dim_store WHERE region = 'EU' UNION ALL SELECT store_key FROM shop.dim_store WHERE region = 'US') SELECT f.sale_id FROM shop.fact_sales f JOIN a ON a.store_key = f.store_key",
    "SELECT * FROM (SELECT f.store_key, f.amount FROM shop.fact_sales f JOIN shop.dim_store s ON f.store_key = s.store_key) PIVOT (SUM(amount) FOR store_key IN (1, 2, 3))",
    "SELECT f.sale_id, s.region FROM shop.fact_sales f FULL OUTER JOIN shop.dim_store s ON f.store_key = s.store_key AND f.amount > 2",
    "SELECT f.sale_id, s.region FROM shop.fact_sales f CROSS JOIN shop.dim_store s WHERE s.region <=> 'EU' AND f.sale_id < 3",
    "SELECT f.sale_id FROM shop.fact_sales f LEFT ANTI JOIN shop.dim_store s ON f.store_key = s.store_key",
    "SELECT f.* , s.* FROM shop.fact_sales f JOIN shop.dim_store s USING (store_key)",
]


@pytest.fixture(scope="module")
def shop(spark):
    sets = load_sets()["star"]
    create_tables(spark, sets["schema"], literals(EXOTIC[1:6]))
    return spark, sets


@pytest.mark.parametrize("sql", EXOTIC)
def test_exotic_sql_keeps_its_results(shop, sql):
    spark, sets = shop
    # Statistics that make every small side a broadcast candidate, so rules do fire where they can.
    stats = StatsCatalog.from_dict(sets["statistics"])
    result = optimize(sql, OptimizerContext(schema=sets["schema"], statistics=stats))
    if result.fallback_reason:
        assert result.sql == sql
        return
    assert spark.sql(result.sql).columns == spark.sql(sql).columns
    assert Counter(rows_of(spark, result.sql)) == Counter(rows_of(spark, sql))
