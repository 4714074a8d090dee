{{ config(hiveopt={'rules': {'merge_correlated_aggregates': var('corr_rules', true), 'merge_sibling_aggregates': var('corr_rules', true)}}) }}
-- TPC-H Q17: a correlated scalar subquery over lineitem compared with rows of lineitem.
select sum(l_extendedprice) / 7.0 as avg_yearly
from {{ source('tpch', 'lineitem') }}, {{ source('tpch', 'part') }}
where p_partkey = l_partkey and p_brand = 'Brand#23' and p_container = 'MED BOX'
  and l_quantity < (select 0.2 * avg(l_quantity) from {{ source('tpch', 'lineitem') }} where l_partkey = p_partkey)
