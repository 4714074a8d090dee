-- TPC-H Q5, bad order: fact joined to fact first, the selective region last
select n.n_name, sum(l.l_extendedprice * (1 - l.l_discount)) as revenue
from {{ source('tpch', 'lineitem') }} l
join {{ source('tpch', 'orders') }} o on l.l_orderkey = o.o_orderkey
join {{ source('tpch', 'customer') }} c on c.c_custkey = o.o_custkey
join {{ source('tpch', 'supplier') }} s on l.l_suppkey = s.s_suppkey and c.c_nationkey = s.s_nationkey
join {{ source('tpch', 'nation') }} n on s.s_nationkey = n.n_nationkey
join {{ source('tpch', 'region') }} r on n.n_regionkey = r.r_regionkey
where r.r_name = 'ASIA' and o.o_orderdate >= date '1994-01-01' and o.o_orderdate < date '1995-01-01'
group by n.n_name
