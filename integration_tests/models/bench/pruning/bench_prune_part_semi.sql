{{ config(hiveopt={'rules': {'prune_partitions_from_small_side': var('bench_rule', true)},
                   'prune_fetch_values': var('bench_fetch', true)}) }}
-- Fact partitioned by store_id, semi-joined to a big filtered table (a sort-merge join): no DPP.
select f.day, count(*) as lines, sum(f.amount) as revenue
from {{ source('pruning_bench', 'sales_by_store') }} f
left semi join {{ source('pruning_bench', 'store_staff') }} t on f.store_id = t.store_id and t.country = 'c07'
group by f.day
