{{ config(hiveopt={'rules': {'merge_correlated_aggregates': var('corr_rules', true), 'merge_sibling_aggregates': var('corr_rules', true)}}) }}
-- TPC-DS q95's shape on TPC-H: a CTE (a self-join of lineitem: orders shipped by two suppliers)
-- read twice; no rule rewrites it: Spark's exchange reuse runs its shuffles once (docs/rules/exchange_reuse.md).
with multi_supplier as (
    select l1.l_orderkey as orderkey, l1.l_suppkey as suppkey
    from {{ source('tpch', 'lineitem') }} l1
    join {{ source('tpch', 'lineitem') }} l2 on l1.l_orderkey = l2.l_orderkey
    where l1.l_suppkey <> l2.l_suppkey and l1.l_shipdate between date '1995-01-01' and date '1995-03-31')
select count(distinct o_orderkey) as orders, sum(o_totalprice) as total
from {{ source('tpch', 'orders') }}
where o_orderdate between date '1994-12-01' and date '1995-03-31'
  and o_orderkey in (select orderkey from multi_supplier)
  and o_orderkey in (select l_orderkey from {{ source('tpch', 'lineitem') }} join multi_supplier on l_orderkey = multi_supplier.orderkey
                     where l_returnflag = 'R')
