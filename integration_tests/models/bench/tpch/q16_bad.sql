-- TPC-H Q16, bad order: partsupp first, the filtered parts last
select p.p_brand, p.p_type, p.p_size, count(distinct ps.ps_suppkey) as supplier_cnt
from {{ source('tpch', 'partsupp') }} ps
join {{ source('tpch', 'part') }} p on p.p_partkey = ps.ps_partkey
where ps.ps_suppkey not in (select s_suppkey from {{ source('tpch', 'supplier') }}
                            where s_comment like '%Customer%Complaints%')
  and p.p_brand <> 'Brand#45' and p.p_type not like 'MEDIUM POLISHED%'
  and p.p_size in (49, 14, 23, 45, 19, 3, 36, 9)
group by p.p_brand, p.p_type, p.p_size
order by supplier_cnt desc, p.p_brand, p.p_type, p.p_size
