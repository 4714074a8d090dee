-- TPC-H Q17: a correlated subquery (average quantity of the same part).
select
    p.brand,
    sum(l.extended_price) / 7.0 as avg_yearly
from {{ ref('stg_lineitem') }} l
join {{ ref('stg_parts') }} p on p.part_key = l.part_key
where p.brand = 'Brand#23'
  and p.container = 'MED BOX'
  and l.quantity < (
      select 0.2 * avg(l2.quantity)
      from {{ ref('stg_lineitem') }} l2
      where l2.part_key = p.part_key
  )
group by p.brand
