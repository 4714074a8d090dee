"""What both forms of rules/merge_correlated_aggregates.py check before an aggregate becomes a
window: the aggregate block's shape, its aggregate functions, its filters against the outer
block's, and the cost of reading the input again against a window's shuffle. A candidate that
passes is a `Rewrite`: the reason and figures for the decision record, and the plan that edits
the tree.

>>> from sqlglot import parse_one
>>> aggregate_problem([parse_one("SUM(DISTINCT x)")], allow_count=True)
'DISTINCT aggregate SUM(DISTINCT x): Spark has no DISTINCT window functions'
>>> aggregate_problem([parse_one("AVG(x)"), parse_one("MAX(y)")], allow_count=False) is None
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.cost_model import CostModel
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.human import human_bytes
from dbt.adapters.hiveopt.optimizer.syntax import (
    WINDOWABLE_AGGREGATES,
    aggregate_shape_problem,
    from_items,
    local_to,
    nested_join,
    non_inner_join,
    normalized,
    renamed,
)

Plan = Callable[[], None]


@dataclass(frozen=True)
class Rewrite:
    """A candidate to rewrite: the reason and figures for the record, and the plan that edits the tree."""

    reason: str
    details: dict
    plan: Plan


def block_shape_problem(select: exp.Select) -> str | None:
    """Why an aggregate block cannot become a window, else None (joins are checked by the caller)."""
    problem = aggregate_shape_problem(select, "the aggregate")
    if problem and problem.startswith("a non-deterministic"):
        return problem + ": evaluating it once instead of twice changes results"
    return problem


def outer_block_problem(select: exp.Select, star: bool = True) -> str | None:
    """Why the outer block cannot take a window into its FROM items, else None: a join that is not
    inner, a nested join, or (with `star`) `SELECT *`, whose output a window column would join.

    >>> from sqlglot import parse_one
    >>> outer_block_problem(parse_one("SELECT a.x FROM a LEFT JOIN b ON a.k = b.k"))
    "the outer block has a LEFT JOIN: which rows survive is not the inner join's"
    """
    join = non_inner_join(select)
    if join:
        return f"the outer block has a {join}: which rows survive is not the inner join's"
    if any(nested_join(i) is not None for i in from_items(select)):
        return "the outer block has a nested join: not matched"
    if star and any(s.find_ancestor(exp.AggFunc) is None for p in select.selects for s in p.find_all(exp.Star)):
        return "the outer block selects *: a window column would join its output"
    return None


def aggregate_problem(aggregates: list[exp.AggFunc], allow_count: bool) -> str | None:
    for agg in aggregates:
        if isinstance(agg.this, exp.Distinct) or agg.find(exp.Distinct):
            return f"DISTINCT aggregate {normalized(agg)}: Spark has no DISTINCT window functions"
        if isinstance(agg, exp.Count) and not allow_count:
            return (
                "COUNT in a correlated scalar subquery (0, not NULL, where no row matches): left to Spark's "
                "decorrelation"
            )
        if isinstance(agg.parent, exp.Filter):
            return f"aggregate with a FILTER clause {normalized(agg.parent)}: not merged"
        if not isinstance(agg, WINDOWABLE_AGGREGATES):
            return f"aggregate {type(agg).__name__.upper()} is not merged (not known to be the same as a window)"
    return None


def filters_covered(
    local: list[exp.Expression],
    inner_alias: str,
    outer_conjuncts: list[exp.Expression],
    outer_alias: str,
    keys: list[str],
) -> str | None:
    """The aggregate's filters must all be filters of the outer relation (the window sees the rows
    the aggregate saw); and the outer relation may not filter more, except on the keys: Spark pushes
    such a filter into the outer read of the input, which the window would have to read whole."""
    outer_local = {normalized(c): c for c in outer_conjuncts if local_to(c, outer_alias)}
    inner_local = {normalized(renamed(p, inner_alias, outer_alias)) for p in local}
    for predicate in local:
        if normalized(renamed(predicate, inner_alias, outer_alias)) not in outer_local:
            return (
                f"the aggregate's filter {normalized(predicate)} is not a filter of {outer_alias} too: the window "
                "would see other rows than the aggregate"
            )
    for text, predicate in outer_local.items():
        if text not in inner_local and any(c.name not in keys for c in predicate.find_all(exp.Column)):
            return (
                f"the outer block filters {outer_alias} further ({text}): Spark pushes that filter into its read "
                "of the input, which a window would read whole (measured 2.1x slower)"
            )
    return None


def cost_decision(
    estimator: Estimator,
    inner_scope: Scope,
    inner_alias: str,
    window_columns: list[str],
    added: int,
    cost_model: CostModel,
) -> tuple[str | None, dict]:
    """(reason to skip or None, figures) from what Spark redoes to read the input again (exchange
    reuse on: only the work above the input's last exchanges) against a window's shuffle."""
    stage = cost_model.recompute(estimator, inner_scope, inner_alias)
    recompute = stage.cost
    rows = estimator.join_block(inner_scope).rows
    source = estimator.source(inner_scope, inner_alias)
    if recompute.is_absent or rows.is_absent:
        return f"statistics absent for the aggregate's input ({stage.redone}): Spark's plan stays", {}
    window = cost_model.window(rows, source.width(window_columns).value, added)
    figures = dict(
        recompute_bytes=round(recompute.value),
        window_shuffle_bytes=round(window.value),
        input_rows=round(rows.value),
        redone=stage.redone,
    )
    if not cost_model.window_pays(recompute, window):
        return (
            f"reading the input again redoes {stage.redone}: {human_bytes(recompute.value)} against "
            f"{human_bytes(window.value)} to shuffle for a window; Spark's aggregate and join stay"
        ), figures
    return None, figures
