{{ config(materialized='ephemeral') }}
select order_key, customer_key, total_price
from {{ ref('stg_orders') }}
where order_date >= date '{{ var("start_date") }}' and total_price > 300000
