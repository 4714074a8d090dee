-- TPC-H Q17, bad order: the line items first, the selective parts last
select sum(l.l_extendedprice) / 7.0 as avg_yearly
from {{ source('tpch', 'lineitem') }} l
join {{ source('tpch', 'part') }} p on p.p_partkey = l.l_partkey
where l.l_quantity < (select 0.2 * avg(l2.l_quantity) from {{ source('tpch', 'lineitem') }} l2
                      where l2.l_partkey = p.p_partkey)
  and p.p_brand = 'Brand#23' and p.p_container = 'MED BOX'
