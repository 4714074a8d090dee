{{ config(hiveopt={'rules': {'select_join_algorithms': var('bench_rule', true)}}) }}
-- Customers of one segment and nation, their orders, and those orders' line items.
select c.market_segment, o.order_status, sum(l.quantity) as quantity, count(*) as lines
from {{ ref('stg_customers') }} c
join {{ ref('stg_orders') }} o on o.customer_key = c.customer_key
join {{ ref('stg_lineitem') }} l on l.order_key = o.order_key
where c.market_segment = 'AUTOMOBILE' and c.nation_key = 7
group by c.market_segment, o.order_status
