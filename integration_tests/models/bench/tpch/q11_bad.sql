-- TPC-H Q11, bad order: partsupp joined to suppliers first, the selective nation last (both blocks)
select ps.ps_partkey, sum(ps.ps_supplycost * ps.ps_availqty) as value
from {{ source('tpch', 'partsupp') }} ps
join {{ source('tpch', 'supplier') }} s on ps.ps_suppkey = s.s_suppkey
join {{ source('tpch', 'nation') }} n on s.s_nationkey = n.n_nationkey
where n.n_name = 'GERMANY'
group by ps.ps_partkey
having sum(ps.ps_supplycost * ps.ps_availqty) > (
  select sum(ps2.ps_supplycost * ps2.ps_availqty) * 0.0001
  from {{ source('tpch', 'partsupp') }} ps2
  join {{ source('tpch', 'supplier') }} s2 on ps2.ps_suppkey = s2.s_suppkey
  join {{ source('tpch', 'nation') }} n2 on s2.s_nationkey = n2.n_nationkey
  where n2.n_name = 'GERMANY')
order by value desc
