-- TPC-H Q2, bad order: the big table first, selective dimensions last
select s.s_acctbal, s.s_name, n.n_name, p.p_partkey, p.p_mfgr, s.s_address, s.s_phone, s.s_comment
from {{ source('tpch', 'partsupp') }} ps
join {{ source('tpch', 'supplier') }} s on s.s_suppkey = ps.ps_suppkey
join {{ source('tpch', 'nation') }} n on s.s_nationkey = n.n_nationkey
join {{ source('tpch', 'part') }} p on p.p_partkey = ps.ps_partkey
join {{ source('tpch', 'region') }} r on n.n_regionkey = r.r_regionkey
where p.p_size = 15 and p.p_type like '%BRASS' and r.r_name = 'EUROPE'
  and ps.ps_supplycost = (
    select min(ps2.ps_supplycost)
    from {{ source('tpch', 'partsupp') }} ps2
    join {{ source('tpch', 'supplier') }} s2 on s2.s_suppkey = ps2.ps_suppkey
    join {{ source('tpch', 'nation') }} n2 on s2.s_nationkey = n2.n_nationkey
    join {{ source('tpch', 'region') }} r2 on n2.n_regionkey = r2.r_regionkey
    where p.p_partkey = ps2.ps_partkey and r2.r_name = 'EUROPE')
order by s.s_acctbal desc, n.n_name, s.s_name, p.p_partkey
limit 100
