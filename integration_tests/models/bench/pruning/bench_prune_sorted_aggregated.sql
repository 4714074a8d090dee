{{ config(hiveopt={'rules': {'prune_partitions_from_small_side': var('bench_rule', true)},
                   'prune_fetch_values': var('bench_fetch', true),
                   'sorted_keys': {'pruning_bench.sales_sorted': ['customer_id']}}) }}
-- Unpartitioned fact sorted by customer_id, aggregated per customer and day before the join to a
-- small filtered dimension: the injected list goes below the aggregate, to the Parquet reader.
with per_day as (
    select customer_id, day, sum(amount) as amount, count(*) as lines
    from {{ source('pruning_bench', 'sales_sorted') }}
    group by customer_id, day
)
select v.tier, count(*) as customer_days, sum(p.lines) as lines, sum(p.amount) as revenue
from per_day p
join {{ source('pruning_bench', 'vip') }} v on p.customer_id = v.customer_id
where v.tier = 'gold'
group by v.tier
