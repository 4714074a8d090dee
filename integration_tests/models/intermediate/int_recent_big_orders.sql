-- Recent big orders: an ephemeral intermediate model, inlined as a CTE where it is used.
select order_key, customer_key, total_price
from {{ ref('stg_orders') }}
where order_date >= date '{{ var("start_date") }}' and total_price > 300000
