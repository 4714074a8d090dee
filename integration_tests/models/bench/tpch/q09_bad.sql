-- TPC-H Q9, bad order: line items joined to orders and partsupp before the selective part filter
select nation, o_year, sum(amount) as sum_profit
from (
  select n.n_name as nation, year(o.o_orderdate) as o_year,
         l.l_extendedprice * (1 - l.l_discount) - ps.ps_supplycost * l.l_quantity as amount
  from {{ source('tpch', 'lineitem') }} l
  join {{ source('tpch', 'orders') }} o on o.o_orderkey = l.l_orderkey
  join {{ source('tpch', 'partsupp') }} ps on ps.ps_suppkey = l.l_suppkey and ps.ps_partkey = l.l_partkey
  join {{ source('tpch', 'supplier') }} s on s.s_suppkey = l.l_suppkey
  join {{ source('tpch', 'nation') }} n on s.s_nationkey = n.n_nationkey
  join {{ source('tpch', 'part') }} p on p.p_partkey = l.l_partkey
  where p.p_name like '%green%'
) as profit
group by nation, o_year
order by nation, o_year desc
