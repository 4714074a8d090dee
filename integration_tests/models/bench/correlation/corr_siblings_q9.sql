{{ config(hiveopt={'rules': {'merge_correlated_aggregates': var('corr_rules', true), 'merge_sibling_aggregates': var('corr_rules', true)}}) }}
-- TPC-DS q9's shape on TPC-H: scalar subqueries over lineitem, three per quantity range, in CASE
-- expressions. Spark merges the subqueries of one range (MergeScalarSubqueries), not across ranges.
select
{%- for low, high, threshold in [(1, 10, 100000), (11, 20, 200000), (21, 30, 300000), (31, 40, 400000), (41, 50, 500000)] %}
    case when (select count(*) from {{ source('tpch', 'lineitem') }} where l_quantity between {{ low }} and {{ high }}) > {{ threshold }}
         then (select avg(l_extendedprice) from {{ source('tpch', 'lineitem') }} where l_quantity between {{ low }} and {{ high }})
         else (select avg(l_discount) from {{ source('tpch', 'lineitem') }} where l_quantity between {{ low }} and {{ high }}) end as bucket{{ loop.index }}{{ "," if not loop.last }}
{%- endfor %}
from {{ source('tpch', 'region') }}
where r_regionkey = 1
