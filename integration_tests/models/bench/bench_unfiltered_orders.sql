{{ config(hiveopt={'rules': {'select_join_algorithms': var('bench_rule', true)}}) }}
-- No filter on the big side: nothing to broadcast (the rule must leave it to Spark).
select o.order_status, sum(l.extended_price) as revenue
from {{ ref('stg_lineitem') }} l
join {{ ref('stg_orders') }} o on o.order_key = l.order_key
group by o.order_status
