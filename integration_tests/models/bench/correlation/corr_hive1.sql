{{ config(hiveopt={'rules': {'merge_correlated_aggregates': var('corr_rules', true), 'merge_sibling_aggregates': var('corr_rules', true)}}) }}
-- The Hive Correlation Optimizer's example 1 over a plain 10M-row table (bench_corr.t1, made by
-- bench/correlation.py): the aggregate is joined back to its own input on the grouping key.
select tmp1.key, count(*) as n
from (select key, avg(value) as avg_value from bench_corr.t1 group by key) tmp1
join bench_corr.t1 on tmp1.key = t1.key
where t1.value > tmp1.avg_value
group by tmp1.key
