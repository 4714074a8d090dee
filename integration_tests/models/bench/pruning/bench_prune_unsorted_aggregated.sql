{{ config(hiveopt={'rules': {'prune_partitions_from_small_side': var('bench_rule', true)},
                   'prune_fetch_values': var('bench_fetch', true)}) }}
-- A fact neither partitioned nor sorted by customer_id (it is partitioned by store), aggregated
-- per customer and day before the join to a small filtered dimension: no row group can be
-- skipped, but the filter below the aggregate spares it the rows that cannot match.
with per_day as (
    select customer_id, day, sum(amount) as amount, count(*) as lines
    from {{ source('pruning_bench', 'sales_by_store') }}
    group by customer_id, day
)
select v.tier, count(*) as customer_days, sum(p.lines) as lines, sum(p.amount) as revenue
from per_day p
join {{ source('pruning_bench', 'vip') }} v on p.customer_id = v.customer_id
where v.tier = 'gold'
group by v.tier
