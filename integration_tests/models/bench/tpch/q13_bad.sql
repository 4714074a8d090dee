-- TPC-H Q13, bad order: the orders first, customers last (the same outer join written as RIGHT OUTER)
select c_count, count(*) as custdist
from (
  select c.c_custkey, count(o.o_orderkey) as c_count
  from {{ source('tpch', 'orders') }} o
  right outer join {{ source('tpch', 'customer') }} c
    on c.c_custkey = o.o_custkey and o.o_comment not like '%special%requests%'
  group by c.c_custkey
) as c_orders
group by c_count
order by custdist desc, c_count desc
