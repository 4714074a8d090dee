"""Identical subqueries and CTEs read more than once (TPC-DS q95's `ws_wh`): find them and record
what happens to them. The rule rewrites nothing, by measurement.

Spark inlines a deterministic CTE at every reference, and its ReuseExchange rule then runs an
identical shuffle (or broadcast) subtree once and reads its output at every other place
(`ReusedExchange` in the physical plan; bench/correlation.py prints the count for a q95-shaped
model). What remains repeated is the work above the reused exchange (a join or aggregate after
the shuffle), which a single SELECT cannot share: Spark SQL has no materialized CTE, and a cache
(CACHE TABLE) is I/O, which rules do not do. Where the repeated block is an aggregate of the same
input as its siblings or joined back to its own input, the two merge rules before this one have
already removed the repetition. So the rule records each repetition with the reason it is left
to Spark. A non-deterministic CTE read twice Spark does not inline (InlineCTE): it computes it
once and shares the result, which is also what its meaning asks for.

>>> from dbt.adapters.hiveopt.optimizer import OptimizerContext, optimize
>>> schema = {"db": {"t": {"k": "int", "v": "int"}}}
>>> sql = "WITH c AS (SELECT k, SUM(v) AS s FROM db.t GROUP BY k) SELECT a.k FROM c AS a JOIN c AS b ON a.k = b.s"
>>> result = optimize(sql, OptimizerContext(schema=schema))
>>> [d.reason[:40] for r in result.rules if r.rule == "reuse_repeated_subqueries" for d in r.decisions]
['CTE c is read 2 times: left to Spark, wh']
"""

from __future__ import annotations

from collections import Counter

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog
from dbt.adapters.hiveopt.optimizer.prepare import deterministic
from dbt.adapters.hiveopt.optimizer.rules.correlation import normalized

LEFT_TO_SPARK = (
    "left to Spark, which inlines it and reuses identical exchanges (ReusedExchange); a SELECT cannot "
    "materialize it, and no rewrite measured faster"
)


def reuse_repeated_subqueries(expression: exp.Expression, log: DecisionLog) -> exp.Expression:
    ctes: dict[str, exp.CTE] = {cte.alias_or_name.lower(): cte for cte in expression.find_all(exp.CTE)}
    reads = Counter(
        table.name.lower() for table in expression.find_all(exp.Table) if not table.db and table.name.lower() in ctes
    )
    for name, count in reads.items():
        if count < 2:
            continue
        if not deterministic(ctes[name].this):
            log.skipped(
                f"CTE {name} is read {count} times and is non-deterministic: Spark does not inline it, it "
                "computes it once and shares it; left to Spark",
                cte=name,
                reads=count,
            )
            continue
        log.skipped(f"CTE {name} is read {count} times: {LEFT_TO_SPARK}", cte=name, reads=count)
    texts: list[str] = [normalized(s.this) for s in expression.find_all(exp.Subquery) if isinstance(s.this, exp.Query)]
    for text, count in Counter(texts).items():
        if count >= 2:
            log.skipped(
                f"an identical subquery is written {count} times: {LEFT_TO_SPARK}", subquery=text[:120], reads=count
            )
    return expression
