-- The 90% fact LEFT JOINed (its preserved side is the skewed one), NULL keys kept
select d.grp, count(*) as n, sum(f.v) as total, count(d.w) as matched
from {{ source('skew_bench', 'fact_90') }} f
left join {{ source('skew_bench', 'dim') }} d on f.k = d.k
group by d.grp
