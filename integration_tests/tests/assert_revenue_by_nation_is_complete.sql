-- Revenue by nation must add up to the revenue computed straight from the sources.
with expected as (
    select sum(l.l_extendedprice * (1 - l.l_discount)) as revenue
    from {{ source('tpch', 'lineitem') }} l
    join {{ source('tpch', 'orders') }} o on l.l_orderkey = o.o_orderkey
    join {{ source('tpch', 'customer') }} c on o.o_custkey = c.c_custkey
    join {{ source('tpch', 'supplier') }} s on l.l_suppkey = s.s_suppkey and s.s_nationkey = c.c_nationkey
    join {{ source('tpch', 'nation') }} n on c.c_nationkey = n.n_nationkey
    join {{ source('tpch', 'region') }} r on n.n_regionkey = r.r_regionkey
    where r.r_name = 'ASIA'
      and o.o_orderdate >= date '{{ var("start_date") }}' and o.o_orderdate < date '{{ var("end_date") }}'
),
actual as (select sum(revenue) as revenue from {{ ref('revenue_by_nation') }})
select * from expected, actual
where abs(expected.revenue - actual.revenue) > 0.01
