-- TPC-H Q12, bad order: all orders joined to the line items, the line items' filters last
select l.l_shipmode,
       sum(case when o.o_orderpriority = '1-URGENT' or o.o_orderpriority = '2-HIGH' then 1 else 0 end) as high_line_count,
       sum(case when o.o_orderpriority <> '1-URGENT' and o.o_orderpriority <> '2-HIGH' then 1 else 0 end) as low_line_count
from {{ source('tpch', 'orders') }} o
join {{ source('tpch', 'lineitem') }} l on o.o_orderkey = l.l_orderkey
where l.l_shipmode in ('MAIL', 'SHIP') and l.l_commitdate < l.l_receiptdate and l.l_shipdate < l.l_commitdate
  and l.l_receiptdate >= date '1994-01-01' and l.l_receiptdate < date '1995-01-01'
group by l.l_shipmode
order by l.l_shipmode
