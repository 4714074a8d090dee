-- TPC-H Q5, written the way the business reads it: region, nation, customer, then the facts.
select
    n.nation_name,
    sum(l.extended_price * (1 - l.discount)) as revenue,
    count(*) as line_count
from {{ ref('stg_regions') }} r
join {{ ref('stg_nations') }} n on n.region_key = r.region_key
join {{ ref('stg_customers') }} c on c.nation_key = n.nation_key
join {{ ref('stg_orders') }} o on o.customer_key = c.customer_key
join {{ ref('stg_lineitem') }} l on l.order_key = o.order_key
join {{ ref('stg_suppliers') }} s on s.supplier_key = l.supplier_key and s.nation_key = c.nation_key
where r.region_name = 'ASIA'
  and o.order_date >= date '{{ var("start_date") }}'
  and o.order_date < date '{{ var("end_date") }}'
group by n.nation_name
