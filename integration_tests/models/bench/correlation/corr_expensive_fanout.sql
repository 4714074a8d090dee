{{ config(hiveopt={'rules': {'merge_correlated_aggregates': var('corr_rules', true), 'merge_sibling_aggregates': var('corr_rules', true)}}) }}
-- An expensive input whose join fans out: lineitem joined to partsupp on the part key (4 suppliers
-- a part, 24M rows) and aggregated per part in the join's own stage (grouped by lineitem's part key,
-- which stays the partitioning whatever the join order); the parts that cost 20% more than their
-- brand's average.
with part_cost as (
    select l_partkey as partkey, p_brand as brand, sum(l_quantity * ps_supplycost) as cost
    from {{ source('tpch', 'lineitem') }}
    join {{ source('tpch', 'partsupp') }} on l_partkey = ps_partkey
    join {{ source('tpch', 'part') }} on l_partkey = p_partkey
    group by l_partkey, p_brand)
select r1.partkey, r1.cost
from part_cost r1
where r1.cost > (select 1.2 * avg(r2.cost) from part_cost r2 where r2.brand = r1.brand)
