{{ config(hiveopt={'rules': {'merge_correlated_aggregates': var('corr_rules', true), 'merge_sibling_aggregates': var('corr_rules', true)}}) }}
-- TPC-DS q9's shape on TPC-H: scalar subqueries over lineitem, three per quantity range, in CASE
-- expressions. Spark merges the subqueries of one range (MergeScalarSubqueries), not across ranges.
select
    case when (select count(*) from {{ source('tpch', 'lineitem') }} where l_quantity between 1 and 10) > 100000
         then (select avg(l_extendedprice) from {{ source('tpch', 'lineitem') }} where l_quantity between 1 and 10)
         else (select avg(l_discount) from {{ source('tpch', 'lineitem') }} where l_quantity between 1 and 10) end as bucket1,
    case when (select count(*) from {{ source('tpch', 'lineitem') }} where l_quantity between 11 and 20) > 200000
         then (select avg(l_extendedprice) from {{ source('tpch', 'lineitem') }} where l_quantity between 11 and 20)
         else (select avg(l_discount) from {{ source('tpch', 'lineitem') }} where l_quantity between 11 and 20) end as bucket2,
    case when (select count(*) from {{ source('tpch', 'lineitem') }} where l_quantity between 21 and 30) > 300000
         then (select avg(l_extendedprice) from {{ source('tpch', 'lineitem') }} where l_quantity between 21 and 30)
         else (select avg(l_discount) from {{ source('tpch', 'lineitem') }} where l_quantity between 21 and 30) end as bucket3,
    case when (select count(*) from {{ source('tpch', 'lineitem') }} where l_quantity between 31 and 40) > 400000
         then (select avg(l_extendedprice) from {{ source('tpch', 'lineitem') }} where l_quantity between 31 and 40)
         else (select avg(l_discount) from {{ source('tpch', 'lineitem') }} where l_quantity between 31 and 40) end as bucket4,
    case when (select count(*) from {{ source('tpch', 'lineitem') }} where l_quantity between 41 and 50) > 500000
         then (select avg(l_extendedprice) from {{ source('tpch', 'lineitem') }} where l_quantity between 41 and 50)
         else (select avg(l_discount) from {{ source('tpch', 'lineitem') }} where l_quantity between 41 and 50) end as bucket5
from {{ source('tpch', 'region') }}
where r_regionkey = 1
