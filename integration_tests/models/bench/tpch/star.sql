-- A star of our own: line items as the fact, three filtered dimensions, written fact first
select p.p_brand, s.s_name, year(o.o_orderdate) as o_year, sum(l.l_extendedprice) as revenue
from {{ source('tpch', 'lineitem') }} l
join {{ source('tpch', 'part') }} p on p.p_partkey = l.l_partkey
join {{ source('tpch', 'supplier') }} s on s.s_suppkey = l.l_suppkey
join {{ source('tpch', 'orders') }} o on o.o_orderkey = l.l_orderkey
where p.p_brand = 'Brand#23' and p.p_container = 'MED BOX' and s.s_nationkey = 7
  and o.o_orderdate >= date '1995-01-01' and o.o_orderdate < date '1995-07-01'
group by p.p_brand, s.s_name, year(o.o_orderdate)
