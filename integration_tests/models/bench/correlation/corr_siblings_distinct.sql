{{ config(hiveopt={'rules': {'merge_correlated_aggregates': var('corr_rules', true), 'merge_sibling_aggregates': var('corr_rules', true)}}) }}
-- TPC-DS q28's shape on TPC-H with its DISTINCT counts: sibling aggregates of lineitem over
-- different quantity ranges, combined by a cross join.
select *
from (select avg(l_extendedprice) as b1_price, count(l_extendedprice) as b1_count, count(distinct l_suppkey) as b1_suppliers
      from {{ source('tpch', 'lineitem') }} where l_quantity between 0 and 10 and (l_discount between 0.02 and 0.05 or l_tax > 0.06)) b1,
     (select avg(l_extendedprice) as b2_price, count(l_extendedprice) as b2_count, count(distinct l_suppkey) as b2_suppliers
      from {{ source('tpch', 'lineitem') }} where l_quantity between 11 and 20 and (l_discount between 0.02 and 0.05 or l_tax > 0.06)) b2,
     (select avg(l_extendedprice) as b3_price, count(l_extendedprice) as b3_count, count(distinct l_suppkey) as b3_suppliers
      from {{ source('tpch', 'lineitem') }} where l_quantity between 21 and 30 and (l_discount between 0.02 and 0.05 or l_tax > 0.06)) b3,
     (select avg(l_extendedprice) as b4_price, count(l_extendedprice) as b4_count, count(distinct l_suppkey) as b4_suppliers
      from {{ source('tpch', 'lineitem') }} where l_quantity between 31 and 40 and (l_discount between 0.02 and 0.05 or l_tax > 0.06)) b4
