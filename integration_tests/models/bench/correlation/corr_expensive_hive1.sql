{{ config(hiveopt={'rules': {'merge_correlated_aggregates': var('corr_rules', true), 'merge_sibling_aggregates': var('corr_rules', true)}}) }}
-- The Hive example 1 over an expensive input: per customer, the orders above the customer's
-- average order, the aggregate joined back to the CTE it reads (a join and an aggregate grouped
-- by the join key).
with order_value as (
    select o_orderkey as orderkey, o_custkey as custkey, sum(l_extendedprice * (1 - l_discount)) as value
    from {{ source('tpch', 'lineitem') }}
    join {{ source('tpch', 'orders') }} on l_orderkey = o_orderkey
    group by o_orderkey, o_custkey)
select tmp1.custkey, count(*) as orders
from (select custkey, avg(value) as avg_value from order_value group by custkey) tmp1
join order_value on tmp1.custkey = order_value.custkey
where order_value.value > tmp1.avg_value
group by tmp1.custkey
