-- TPC-H Q21, bad order: line items joined to orders before the selective supplier nation
select s.s_name, count(*) as numwait
from {{ source('tpch', 'lineitem') }} l1
join {{ source('tpch', 'orders') }} o on o.o_orderkey = l1.l_orderkey
join {{ source('tpch', 'supplier') }} s on s.s_suppkey = l1.l_suppkey
join {{ source('tpch', 'nation') }} n on s.s_nationkey = n.n_nationkey
where o.o_orderstatus = 'F' and l1.l_receiptdate > l1.l_commitdate and n.n_name = 'SAUDI ARABIA'
  and exists (select * from {{ source('tpch', 'lineitem') }} l2
              where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey)
  and not exists (select * from {{ source('tpch', 'lineitem') }} l3
                  where l3.l_orderkey = l1.l_orderkey and l3.l_suppkey <> l1.l_suppkey
                    and l3.l_receiptdate > l3.l_commitdate)
group by s.s_name
order by numwait desc, s.s_name
limit 100
