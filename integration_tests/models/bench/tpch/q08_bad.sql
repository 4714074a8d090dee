-- TPC-H Q8, bad order: facts first, the selective part type and region last
select o_year, sum(case when nation = 'BRAZIL' then volume else 0 end) / sum(volume) as mkt_share
from (
  select year(o.o_orderdate) as o_year, l.l_extendedprice * (1 - l.l_discount) as volume, n2.n_name as nation
  from {{ source('tpch', 'lineitem') }} l
  join {{ source('tpch', 'orders') }} o on l.l_orderkey = o.o_orderkey
  join {{ source('tpch', 'customer') }} c on o.o_custkey = c.c_custkey
  join {{ source('tpch', 'supplier') }} s on s.s_suppkey = l.l_suppkey
  join {{ source('tpch', 'nation') }} n2 on s.s_nationkey = n2.n_nationkey
  join {{ source('tpch', 'nation') }} n1 on c.c_nationkey = n1.n_nationkey
  join {{ source('tpch', 'region') }} r on n1.n_regionkey = r.r_regionkey
  join {{ source('tpch', 'part') }} p on p.p_partkey = l.l_partkey
  where r.r_name = 'AMERICA' and o.o_orderdate between date '1995-01-01' and date '1996-12-31'
    and p.p_type = 'ECONOMY ANODIZED STEEL'
) as all_nations
group by o_year
order by o_year
