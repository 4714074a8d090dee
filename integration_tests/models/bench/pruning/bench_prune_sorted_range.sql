{{ config(hiveopt={'rules': {'prune_partitions_from_small_side': var('bench_rule', true)},
                   'prune_fetch_values': var('bench_fetch', true),
                   'sorted_keys': {'pruning_bench.sales_sorted': ['customer_id']}}) }}
-- Unpartitioned fact sorted by customer_id, joined to a big dimension filtered to many customers
-- (more keys than the list bound: a range), too big to broadcast: a sort-merge join.
select c.segment, count(*) as lines, sum(f.amount) as revenue
from {{ source('pruning_bench', 'sales_sorted') }} f
join {{ source('pruning_bench', 'customers') }} c on f.customer_id = c.customer_id
where c.cohort in ('k07', 'k08', 'k09', 'k10', 'k11', 'k12', 'k13', 'k14')
group by c.segment
