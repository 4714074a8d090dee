-- TPC-H Q18, bad order: line items joined to orders and customers, the large-order filter last
select c.c_name, c.c_custkey, o.o_orderkey, o.o_orderdate, o.o_totalprice, sum(l.l_quantity) as sum_qty
from {{ source('tpch', 'lineitem') }} l
join {{ source('tpch', 'orders') }} o on o.o_orderkey = l.l_orderkey
join {{ source('tpch', 'customer') }} c on c.c_custkey = o.o_custkey
where o.o_orderkey in (select l2.l_orderkey from {{ source('tpch', 'lineitem') }} l2
                       group by l2.l_orderkey having sum(l2.l_quantity) > 300)
group by c.c_name, c.c_custkey, o.o_orderkey, o.o_orderdate, o.o_totalprice
order by o.o_totalprice desc, o.o_orderdate
limit 100
