-- TPC-H Q14, bad order: the line items first, parts last, the ship-date filter at the end
select 100.00 * sum(case when p.p_type like 'PROMO%' then l.l_extendedprice * (1 - l.l_discount) else 0 end)
       / sum(l.l_extendedprice * (1 - l.l_discount)) as promo_revenue
from {{ source('tpch', 'lineitem') }} l
join {{ source('tpch', 'part') }} p on l.l_partkey = p.p_partkey
where l.l_shipdate >= date '1995-09-01' and l.l_shipdate < date '1995-10-01'
