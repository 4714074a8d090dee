"""Merge an aggregate joined back to its own input into a window over one pass (Hive's
Correlation Optimizer, input correlation; YSmart).

What it does, when it fires and what was measured: docs/rules/merge_correlated_aggregates.md.
The four forms: optimizer/correlated_derived_table.py (an aggregate derived table joined back),
optimizer/correlated_scalar_subquery.py (a correlated scalar subquery),
optimizer/correlated_in_subquery.py (an IN subquery keeping an aggregate's keys by HAVING, joined
back on its key: TPC-H Q18) and optimizer/correlated_exists.py (EXISTS / NOT EXISTS over the
relation itself on its key: TPC-H Q21); their shared checks are in
optimizer/correlated_checks.py and the tree edits in optimizer/correlated_windows.py.

>>> from dbt.adapters.hiveopt.optimizer import OptimizerContext, optimize, StatsCatalog
>>> schema = {"db": {"f": {"k": "int", "v": "double"}, "d": {"k": "int", "g": "string"}}}
>>> stats = StatsCatalog.from_dict({
...     "db.f": {"row_count": 10**8, "columns": {"k": {"ndv": 10**6}}},
...     "db.d": {"row_count": 10**6, "columns": {"k": {"ndv": 10**6}, "g": {"ndv": 10}}}})
>>> sql = ("WITH s AS (SELECT f.k, d.g, SUM(f.v) AS t FROM db.f JOIN db.d ON f.k = d.k GROUP BY f.k, d.g) "
...        "SELECT s1.k FROM s s1 WHERE s1.t > (SELECT 1.2 * AVG(s2.t) FROM s s2 WHERE s2.g = s1.g)")
>>> from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
>>> only = OptimizerConfig(rules={"reorder_joins": False, "select_join_algorithms": False})
>>> context = OptimizerContext(schema=schema, statistics=stats, config=only)
>>> print(optimize(sql, context).sql)  # doctest: +NORMALIZE_WHITESPACE
WITH s AS (SELECT f.k AS k, d.g AS g, SUM(f.v) AS t FROM db.f AS f JOIN db.d AS d ON f.k = d.k GROUP BY f.k, d.g)
SELECT s1.k AS k FROM (SELECT s1.g AS g, s1.k AS k, s1.t AS t, CASE WHEN s1.g IS NULL THEN NULL
ELSE 1.2 * AVG(s1.t) OVER (PARTITION BY s1.g) END AS _hiveopt_0 FROM s AS s1) AS s1 WHERE s1.t > (s1._hiveopt_0)
>>> schema["db"]["p"] = {"k": "int", "brand": "string"}  # parts: a filter on brand keeps one in 1000
>>> stats = StatsCatalog.from_dict({**stats.to_dict(), "db.p": {"row_count": 10**6, "columns": {
...     "k": {"ndv": 10**6}, "brand": {"ndv": 1000}}}})
>>> q2 = ("SELECT p.brand, f.v FROM db.p, db.f WHERE p.k = f.k AND p.brand = 'x' "
...       "AND f.v = (SELECT MIN(f2.v) FROM db.f AS f2 WHERE f2.k = p.k)")
>>> context = OptimizerContext(schema=schema, statistics=stats, config=only)
>>> print(optimize(q2, context).sql)  # doctest: +NORMALIZE_WHITESPACE
SELECT _hiveopt_0.brand AS brand, _hiveopt_0.v AS v FROM (SELECT p.brand AS brand, f.v AS v,
MIN(f.v) OVER (PARTITION BY f.k) AS _hiveopt_1 FROM db.p AS p JOIN db.f AS f ON p.k = f.k
WHERE p.brand = 'x') AS _hiveopt_0 WHERE _hiveopt_0.v = (_hiveopt_0._hiveopt_1)
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.correlated_checks import Plan
from dbt.adapters.hiveopt.optimizer.correlated_derived_table import derived_table_window
from dbt.adapters.hiveopt.optimizer.correlated_exists import exists_window
from dbt.adapters.hiveopt.optimizer.correlated_in_subquery import in_subquery_window
from dbt.adapters.hiveopt.optimizer.correlated_scalar_subquery import scalar_subquery_window
from dbt.adapters.hiveopt.optimizer.cost_model import CostModel
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog, Skip
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.syntax import normalized

# Rewrites per query; each one restarts the scan of the (changed) query.
MAX_REWRITES = 16
# Per kind of candidate: what analyses it, and its label in the decision record.
ANALYSES = {
    "scalar": (scalar_subquery_window, "correlated scalar subquery"),
    "in": (in_subquery_window, "IN subquery"),
    "exists": (exists_window, "EXISTS subquery"),
    "derived": (derived_table_window, "derived table {candidate}"),
}


def merge_correlated_aggregates(
    expression: exp.Expression, schema, estimator: Estimator, cost_model: CostModel, log: DecisionLog
) -> exp.Expression:
    """Rewrite each aggregate joined back to its own input (a derived table, a correlated scalar
    subquery, or an IN subquery keeping its keys), and each EXISTS over the input itself on its
    key, as a window over one read, where the cost model says a second read costs more than the
    window's shuffle (shapes C and D: where Spark shuffles the input on the key anyway).
    Details: docs/rules/merge_correlated_aggregates.md.

    >>> from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
    >>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
    >>> schema = {"db": {"f": {"k": "int", "v": "double"}, "d": {"k": "int", "g": "string"}}}
    >>> stats = StatsCatalog.from_dict({"db.f": {"row_count": 10**8, "columns": {"k": {"ndv": 10**6}}},
    ...     "db.d": {"row_count": 10**6, "columns": {"k": {"ndv": 10**6}, "g": {"ndv": 10}}}})
    >>> sql = ("WITH s AS (SELECT f.k, d.g, SUM(f.v) AS t FROM db.f JOIN db.d ON f.k = d.k GROUP BY f.k, d.g) "
    ...        "SELECT s1.k FROM s s1 WHERE s1.t > (SELECT 1.2 * AVG(s2.t) FROM s s2 WHERE s2.g = s1.g)")
    >>> expression = prepare_query(sql, schema).expression
    >>> estimator, log = Estimator(expression, schema, stats), DecisionLog("merge_correlated_aggregates")
    >>> print(merge_correlated_aggregates(expression, schema, estimator, CostModel(10 * 2**20), log).sql())
    ... # doctest: +NORMALIZE_WHITESPACE
    WITH s AS (SELECT f.k AS k, d.g AS g, SUM(f.v) AS t FROM db.f AS f JOIN db.d AS d ON f.k = d.k
    GROUP BY f.k, d.g) SELECT s1.k AS k FROM (SELECT s1.g AS g, s1.k AS k, s1.t AS t, CASE WHEN s1.g IS NULL
    THEN NULL ELSE 1.2 * AVG(s1.t) OVER (PARTITION BY s1.g) END AS _hiveopt_0 FROM s AS s1) AS s1
    WHERE s1.t > (s1._hiveopt_0)
    """
    decided: set[str] = set()
    for _ in range(MAX_REWRITES):
        plan = _next_rewrite(expression, schema, estimator, cost_model, log, decided)
        if plan is None:
            break
        plan()
        estimator = estimator.over(expression)  # the tree changed: its scopes are new
    return expression


def _next_rewrite(
    expression, schema, estimator: Estimator, cost_model: CostModel, log, decided: set[str]
) -> Plan | None:
    scopes = list(estimator.scopes.values())
    for scope in scopes:
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        candidates = [
            ("exists" if isinstance(sub.expression.parent, exp.Exists) else "scalar", sub)
            for sub in scope.subquery_scopes
            if sub.is_correlated_subquery
        ]
        candidates += [("in", sub) for sub in scope.subquery_scopes if _uncorrelated_in(sub)]
        candidates += [
            ("derived", alias)
            for alias, (node, source) in scope.selected_sources.items()
            if isinstance(source, Scope) and source.is_derived_table
        ]
        for kind, candidate in candidates:
            node = candidate.expression if kind != "derived" else scope.selected_sources[candidate][0]
            key = f"{kind}:{normalized(node)}"
            if key in decided:
                continue
            decided.add(key)
            analyse, label = ANALYSES[kind]
            outcome = analyse(expression, scope, candidate, scopes, estimator, schema, cost_model)
            label = label.format(candidate=candidate)
            if isinstance(outcome, Skip):
                outcome.record_in(log, candidate=label)
                continue
            log.fired(outcome.reason, candidate=label, **outcome.details)
            return outcome.plan
    return None


def _uncorrelated_in(sub: Scope) -> bool:
    """An uncorrelated subquery that is the right side of an IN (shape C)."""
    wrapper = sub.expression.parent
    return (
        not sub.is_correlated_subquery
        and isinstance(wrapper, exp.Subquery)
        and isinstance(wrapper.parent, exp.In)
        and wrapper.parent.args.get("query") is wrapper
    )
