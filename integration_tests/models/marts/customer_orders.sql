{{ config(materialized='view') }}
-- Every customer, with or without orders: an outer join the optimizer must leave as it is.
select
    c.customer_key,
    c.customer_name,
    c.market_segment,
    count(o.order_key) as order_count,
    coalesce(sum(o.total_price), 0) as lifetime_value
from {{ ref('stg_customers') }} c
left join {{ ref('stg_orders') }} o on o.customer_key = c.customer_key
group by c.customer_key, c.customer_name, c.market_segment
