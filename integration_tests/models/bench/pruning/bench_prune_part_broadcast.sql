{{ config(hiveopt={'rules': {'prune_partitions_from_small_side': var('bench_rule', true)},
                   'prune_fetch_values': var('bench_fetch', true)}) }}
-- Fact partitioned by store_id joined to a small filtered dimension: Spark's DPP prunes.
select s.region, count(*) as lines, sum(f.amount) as revenue
from {{ source('pruning_bench', 'sales_by_store') }} f
join {{ source('pruning_bench', 'stores') }} s on f.store_id = s.store_id
where s.region = 'r3'
group by s.region
