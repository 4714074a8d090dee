{{ config(hiveopt={'rules': {'merge_correlated_aggregates': var('corr_rules', true), 'merge_sibling_aggregates': var('corr_rules', true)}}) }}
-- TPC-DS q1's shape on TPC-H: orders worth 20% more than their customer's average order; the
-- aggregate's input is itself a join and an aggregate (a CTE read twice) whose aggregate sits on
-- the sort-merge join (grouped by the join key): reading it again redoes the join's sorts and the
-- aggregate above the exchanges Spark reuses.
with order_value as (
    select o_orderkey as orderkey, o_custkey as custkey, sum(l_extendedprice * (1 - l_discount)) as value
    from {{ source('tpch', 'lineitem') }}
    join {{ source('tpch', 'orders') }} on l_orderkey = o_orderkey
    group by o_orderkey, o_custkey)
select r1.orderkey, r1.value
from order_value r1
where r1.value > (select 1.2 * avg(r2.value) from order_value r2 where r2.custkey = r1.custkey)
