-- TPC-H Q4 as written (one relation per block, line items in EXISTS: no bad order)
select o_orderpriority, count(*) as order_count
from {{ source('tpch', 'orders') }}
where o_orderdate >= date '1993-07-01' and o_orderdate < date '1993-10-01'
  and exists (select * from {{ source('tpch', 'lineitem') }}
              where l_orderkey = o_orderkey and l_commitdate < l_receiptdate)
group by o_orderpriority
order by o_orderpriority
