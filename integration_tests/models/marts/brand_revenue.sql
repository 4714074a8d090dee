-- Revenue of one brand and container: a filtered dimension joined to the fact.
select
    p.brand,
    p.container,
    l.ship_date,
    sum(l.extended_price) as revenue,
    sum(l.quantity) as quantity
from {{ ref('stg_lineitem') }} l
join {{ ref('stg_parts') }} p on p.part_key = l.part_key
where p.brand = 'Brand#23'
  and p.container in ('MED BOX', 'MED PACK', 'LG BOX')
group by p.brand, p.container, l.ship_date
