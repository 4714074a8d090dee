{{ config(hiveopt={'rules': {'prune_partitions_from_small_side': var('bench_rule', true)},
                   'prune_fetch_values': var('bench_fetch', true),
                   'sorted_keys': {'pruning_bench.sales_sorted': ['customer_id']}}) }}
-- Unpartitioned fact sorted by customer_id, joined to a small filtered dimension (broadcast):
-- Spark's DPP does not apply to an unpartitioned table.
select v.tier, count(*) as lines, sum(f.amount) as revenue
from {{ source('pruning_bench', 'sales_sorted') }} f
join {{ source('pruning_bench', 'vip') }} v on f.customer_id = v.customer_id
where v.tier = 'gold'
group by v.tier
