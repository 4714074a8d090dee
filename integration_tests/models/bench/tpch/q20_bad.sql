-- TPC-H Q20, bad order: suppliers first, the selective nation last
select s.s_name, s.s_address
from {{ source('tpch', 'supplier') }} s
join {{ source('tpch', 'nation') }} n on s.s_nationkey = n.n_nationkey
where s.s_suppkey in (
    select ps_suppkey
    from {{ source('tpch', 'partsupp') }}
    where ps_partkey in (select p_partkey from {{ source('tpch', 'part') }} where p_name like 'forest%')
      and ps_availqty > (
        select 0.5 * sum(l_quantity)
        from {{ source('tpch', 'lineitem') }}
        where l_partkey = ps_partkey and l_suppkey = ps_suppkey
          and l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01'))
  and n.n_name = 'CANADA'
order by s.s_name
