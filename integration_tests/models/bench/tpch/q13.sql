-- TPC-H Q13 as written (WORD1 special, WORD2 requests)
select c_count, count(*) as custdist
from (
  select c_custkey, count(o_orderkey) as c_count
  from {{ source('tpch', 'customer') }} left outer join {{ source('tpch', 'orders') }}
    on c_custkey = o_custkey and o_comment not like '%special%requests%'
  group by c_custkey
) as c_orders
group by c_count
order by custdist desc, c_count desc
