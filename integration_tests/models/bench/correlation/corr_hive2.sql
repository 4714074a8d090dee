{{ config(hiveopt={'rules': {'merge_correlated_aggregates': var('corr_rules', true), 'merge_sibling_aggregates': var('corr_rules', true)}}) }}
-- The Hive Correlation Optimizer's example 2: aggregates of two tables joined on their common key
-- (job-flow correlation, which Spark's planner already handles: no shuffle between them).
select tmp1.key, tmp1.cnt as cnt1, tmp2.cnt as cnt2
from (select key, count(*) as cnt from bench_corr.t1 group by key) tmp1
join (select key, count(*) as cnt from bench_corr.t2 group by key) tmp2 on tmp1.key = tmp2.key
