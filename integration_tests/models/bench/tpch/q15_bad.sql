-- TPC-H Q15, bad order: the revenue of every supplier first, suppliers last
with revenue0 as (
  select l_suppkey as supplier_no, sum(l_extendedprice * (1 - l_discount)) as total_revenue
  from {{ source('tpch', 'lineitem') }}
  where l_shipdate >= date '1996-01-01' and l_shipdate < date '1996-04-01'
  group by l_suppkey
)
select s.s_suppkey, s.s_name, s.s_address, s.s_phone, r.total_revenue
from revenue0 r
join {{ source('tpch', 'supplier') }} s on s.s_suppkey = r.supplier_no
where r.total_revenue = (select max(total_revenue) from revenue0)
order by s.s_suppkey
