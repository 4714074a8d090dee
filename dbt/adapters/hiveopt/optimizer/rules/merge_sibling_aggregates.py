"""Merge sibling aggregations over the same input into one pass with conditional aggregates
(Hive's Correlation Optimizer, input correlation between siblings; TPC-DS q28 / q88 shapes).

What it does, when it fires and what was measured: docs/rules/merge_sibling_aggregates.md.

>>> from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, optimize
>>> from dbt.adapters.hiveopt.optimizer.cost_model import CostModel
>>> schema = {"db": {"t": {"q": "int", "p": "double"}}}
>>> sql = ("SELECT b1.a, b2.c FROM (SELECT AVG(p) AS a FROM db.t WHERE q BETWEEN 0 AND 5) b1, "
...        "(SELECT COUNT(p) AS c FROM db.t WHERE q BETWEEN 6 AND 10) b2")
>>> only = OptimizerConfig(rules={"reorder_joins": False, "select_join_algorithms": False})
>>> print(optimize(sql, OptimizerContext(schema=schema, config=only)).sql)  # doctest: +NORMALIZE_WHITESPACE
SELECT b1.a AS a, b1.c AS c FROM (SELECT AVG(t.p) FILTER(WHERE t.q BETWEEN 0 AND 5) AS a,
COUNT(t.p) FILTER(WHERE t.q BETWEEN 6 AND 10) AS c FROM db.t AS t
WHERE t.q BETWEEN 0 AND 5 OR t.q BETWEEN 6 AND 10) AS b1
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.cost_model import CostModel
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.group_by_distinct_first import group_by_distinct_first
from dbt.adapters.hiveopt.optimizer.join_scalar_siblings import join_scalar_siblings
from dbt.adapters.hiveopt.optimizer.merge_derived_siblings import merge_derived_siblings
from dbt.adapters.hiveopt.optimizer.widen_scalar_siblings import widen_scalar_siblings

# The rule's rewrites, one per shape of sibling aggregates, in the order they apply. Each can be
# switched on its own as `merge_sibling_aggregates.<function name>` in `rules:`.
SHAPES = (
    # Derived tables of one block over one input (q28, q88) -> one pass with FILTER clauses.
    # First: the derived table join_scalar_siblings adds carries FILTER clauses, which it would refuse.
    merge_derived_siblings,
    # A scalar pass just merged whose COUNT(DISTINCT d) carry FILTER clauses -> grouped by d first
    # (Spark would copy every row once per filter). Decided as each pass is merged: it replaces the
    # FILTER form, before that form's conditions are projected once (filter_clauses).
    group_by_distinct_first,
    # Uncorrelated scalar subqueries of one block over one input (q9) -> a shared WHERE and FILTER
    # clauses, each in its place. Once, after the merges: it reads the blocks as they left them.
    widen_scalar_siblings,
    # Widened subqueries all in the SELECT list of a small block that does not aggregate -> one
    # derived table, cross joined. Right after widening: it takes their shared WHERE and FILTERs.
    join_scalar_siblings,
)

SHAPE_NAMES = tuple(shape.__name__ for shape in SHAPES)


def merge_sibling_aggregates(
    expression: exp.Expression,
    estimator: Estimator,
    cost_model: CostModel,
    log: DecisionLog,
    config: OptimizerConfig | None = None,
) -> exp.Expression:
    """Merge aggregations of one input under different filters into one pass with FILTER clauses
    (derived-table siblings, and uncorrelated scalar subqueries of one block): the rewrites of
    SHAPES switched on in `config` (all by default), in order. Needs no statistics. Details:
    docs/rules/merge_sibling_aggregates.md.

    >>> from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
    >>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
    >>> schema = {"db": {"t": {"q": "int", "p": "double"}}}
    >>> sql = ("SELECT b1.a, b2.c FROM (SELECT AVG(p) AS a FROM db.t WHERE q < 5) b1, "
    ...        "(SELECT COUNT(p) AS c FROM db.t WHERE q >= 5) b2")
    >>> expression = prepare_query(sql, schema).expression
    >>> estimator, log = Estimator(expression, schema, StatsCatalog()), DecisionLog("merge_sibling_aggregates")
    >>> print(merge_sibling_aggregates(expression, estimator, CostModel(10 * 2**20), log).sql())
    ... # doctest: +NORMALIZE_WHITESPACE
    SELECT b1.a AS a, b1.c AS c FROM (SELECT AVG(t.p) FILTER(WHERE t.q < 5) AS a,
    COUNT(t.p) FILTER(WHERE t.q >= 5) AS c FROM db.t AS t WHERE t.q < 5 OR t.q >= 5) AS b1
    """
    config = config or OptimizerConfig()
    shapes = [s for s in SHAPES if config.rule_enabled(f"merge_sibling_aggregates.{s.__name__}")]
    if merge_derived_siblings in shapes:
        merge_derived_siblings(expression, estimator, cost_model, log, distinct_first=group_by_distinct_first in shapes)
    if widen_scalar_siblings in shapes:
        widen_scalar_siblings(expression, estimator, log, join=join_scalar_siblings in shapes)
    return expression
