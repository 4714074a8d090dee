{{ config(hiveopt={'rules': {'merge_correlated_aggregates': var('corr_rules', true), 'merge_sibling_aggregates': var('corr_rules', true)}}) }}
-- The Hive example 1 over an expensive input: per nation, the customers above their nation's
-- average spend, the aggregate joined back to the CTE it reads.
with cust_spend as (
    select o_custkey as custkey, c_nationkey as nationkey, sum(l_extendedprice * (1 - l_discount)) as spent
    from {{ source('tpch', 'lineitem') }}
    join {{ source('tpch', 'orders') }} on l_orderkey = o_orderkey
    join {{ source('tpch', 'customer') }} on o_custkey = c_custkey
    group by o_custkey, c_nationkey)
select tmp1.nationkey, count(*) as customers
from (select nationkey, avg(spent) as avg_spent from cust_spend group by nationkey) tmp1
join cust_spend on tmp1.nationkey = cust_spend.nationkey
where cust_spend.spent > tmp1.avg_spent
group by tmp1.nationkey
