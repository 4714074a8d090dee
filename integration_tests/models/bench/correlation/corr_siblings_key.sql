{{ config(hiveopt={'rules': {'merge_correlated_aggregates': var('corr_rules', true), 'merge_sibling_aggregates': var('corr_rules', true)}}) }}
-- Two aggregates of one 10M-row table per key with different filters, joined on the key (the
-- issue's measured shape: 5.4 s as two aggregates, 3.3 s as one with FILTER clauses).
select a.key, a.low_sum, b.high_sum, b.high_n
from (select key, sum(value) as low_sum from bench_corr.t1 where value < 500 group by key) a
join (select key, sum(value) as high_sum, count(*) as high_n from bench_corr.t1 where value >= 250 group by key) b
  on a.key = b.key
