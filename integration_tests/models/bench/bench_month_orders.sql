{{ config(hiveopt={'rules': {'select_join_algorithms': var('bench_rule', true)}}) }}
-- One month of orders (a dimension far over Spark's 10 MB broadcast line before its filter)
-- joined to all line items.
select o.order_priority, count(*) as lines, sum(l.extended_price) as revenue
from {{ ref('stg_lineitem') }} l
join {{ ref('stg_orders') }} o on o.order_key = l.order_key
where o.order_date >= date '1995-03-01' and o.order_date < date '1995-04-01'
group by o.order_priority
