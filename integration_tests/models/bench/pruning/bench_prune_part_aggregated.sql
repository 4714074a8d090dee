{{ config(hiveopt={'rules': {'prune_partitions_from_small_side': var('bench_rule', true)},
                   'prune_fetch_values': var('bench_fetch', true)}) }}
-- Fact partitioned by store_id, aggregated per store and day before the join.
with daily as (
    select store_id, day, sum(amount) as amount
    from {{ source('pruning_bench', 'sales_by_store') }}
    group by store_id, day
)
select s.region, count(*) as store_days, sum(d.amount) as revenue
from daily d
join {{ source('pruning_bench', 'stores') }} s on d.store_id = s.store_id
where s.region = 'r3'
group by s.region
