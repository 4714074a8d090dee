-- 50% of the fact's rows carry one key; the dimension is too big to broadcast
select d.grp, count(*) as n, sum(f.v * d.w) as total
from {{ source('skew_bench', 'fact_50') }} f
join {{ source('skew_bench', 'dim') }} d on f.k = d.k
group by d.grp
