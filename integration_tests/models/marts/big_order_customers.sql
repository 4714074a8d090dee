-- Customers with a recent big order (an ephemeral model, inlined as a CTE).
select c.customer_key, c.customer_name, count(*) as big_orders, max(b.total_price) as biggest
from {{ ref('stg_customers') }} c
join {{ ref('int_recent_big_orders') }} b on b.customer_key = c.customer_key
group by c.customer_key, c.customer_name
