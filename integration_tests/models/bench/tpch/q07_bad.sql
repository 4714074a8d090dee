-- TPC-H Q7, bad order: line items and orders first, nations last
select supp_nation, cust_nation, l_year, sum(volume) as revenue
from (
  select n1.n_name as supp_nation, n2.n_name as cust_nation, year(l.l_shipdate) as l_year,
         l.l_extendedprice * (1 - l.l_discount) as volume
  from {{ source('tpch', 'lineitem') }} l
  join {{ source('tpch', 'orders') }} o on o.o_orderkey = l.l_orderkey
  join {{ source('tpch', 'customer') }} c on c.c_custkey = o.o_custkey
  join {{ source('tpch', 'supplier') }} s on s.s_suppkey = l.l_suppkey
  join {{ source('tpch', 'nation') }} n1 on s.s_nationkey = n1.n_nationkey
  join {{ source('tpch', 'nation') }} n2 on c.c_nationkey = n2.n_nationkey
  where ((n1.n_name = 'FRANCE' and n2.n_name = 'GERMANY') or (n1.n_name = 'GERMANY' and n2.n_name = 'FRANCE'))
    and l.l_shipdate between date '1995-01-01' and date '1996-12-31'
) as shipping
group by supp_nation, cust_nation, l_year
order by supp_nation, cust_nation, l_year
