{{ config(materialized='incremental', incremental_strategy='append') }}
-- Revenue per ship date and market segment, appended day by day.
select
    l.ship_date,
    c.market_segment,
    sum(l.extended_price * (1 - l.discount)) as revenue
from {{ ref('stg_customers') }} c
join {{ ref('stg_orders') }} o on o.customer_key = c.customer_key
join {{ ref('stg_lineitem') }} l on l.order_key = o.order_key
where c.market_segment = 'BUILDING'
{% if is_incremental() %}
  and l.ship_date > (select max(ship_date) from {{ this }})
{% endif %}
group by l.ship_date, c.market_segment
