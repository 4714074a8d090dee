-- TPC-H Q10, bad order: line items first, then customers and nations, the date-filtered orders last
select c.c_custkey, c.c_name, sum(l.l_extendedprice * (1 - l.l_discount)) as revenue, c.c_acctbal, n.n_name,
       c.c_address, c.c_phone, c.c_comment
from {{ source('tpch', 'lineitem') }} l
join {{ source('tpch', 'orders') }} o on l.l_orderkey = o.o_orderkey
join {{ source('tpch', 'customer') }} c on c.c_custkey = o.o_custkey
join {{ source('tpch', 'nation') }} n on c.c_nationkey = n.n_nationkey
where o.o_orderdate >= date '1993-10-01' and o.o_orderdate < date '1994-01-01' and l.l_returnflag = 'R'
group by c.c_custkey, c.c_name, c.c_acctbal, c.c_phone, n.n_name, c.c_address, c.c_comment
order by revenue desc
limit 20
