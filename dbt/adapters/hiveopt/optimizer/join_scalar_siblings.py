"""Widened scalar subqueries (widen_scalar_siblings.py) that all sit in the SELECT list of a small
block that does not aggregate, as the columns of one derived table cross joined to the block
(rules/merge_sibling_aggregates.py; TPC-DS q9's shape).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.decisions import Skip
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.filter_clauses import evaluate_filters_once
from dbt.adapters.hiveopt.optimizer.syntax import fresh_names, own_aggregate

# Scalar siblings become a cross-joined derived table only in a block of at most this many rows.
MAX_JOINED_BLOCK_ROWS = 10_000


def join_scalar_siblings(scope: Scope, members: list[exp.Select], root: exp.Expression, estimator: Estimator) -> bool:
    """Widened scalar subqueries that all sit in the SELECT list of a block that does not aggregate
    become the columns of one derived table, cross joined to the block: an aggregate without GROUP
    BY returns exactly one row (empty input included), so every row of the block meets the same
    values the subqueries returned. Spark then runs one job instead of a subquery before the query:
    measured (TPC-DS q9's shape on TPC-H SF 1, SELECT alone, medians of 5) 0.97 s with Spark's merged
    subquery, 0.77 s cross joined. Subqueries in WHERE stay: there Spark pushes their values into
    the scan's filters, which a join condition would not be. Only for a block estimated at a few
    rows (q9's is one): measured there; a big block would stream through a nested-loop join
    instead of reading a constant. True when it joined them."""
    block = _joinable_block(scope, members, root, estimator)
    if isinstance(block, Skip):
        return False
    names = fresh_names(root, len(members) + 1)
    alias, columns = names[0], names[1:]
    derived = members[0].copy()
    derived.set(
        "expressions", [exp.alias_(m.selects[0].unalias().copy(), c, copy=False) for m, c in zip(members, columns)]
    )
    for member, column in zip(members, columns):
        member.parent.replace(exp.column(column, table=alias))
    table = exp.Subquery(this=derived, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    if block.args.get("from_"):
        block.append("joins", exp.Join(this=table, kind="CROSS"))
    else:
        block.set("from_", exp.From(this=table))
    evaluate_filters_once(derived, root)  # in place: its flags' names are then new to the whole query
    return True


def _joinable_block(
    scope: Scope, members: list[exp.Select], root: exp.Expression, estimator: Estimator
) -> exp.Select | Skip:
    """The block the subqueries can be joined to, or why not (not recorded: they stay widened)."""
    block = scope.expression
    if not isinstance(block, exp.Select) or block.args.get("group") or block.args.get("having"):
        return Skip("the block groups its rows", record=False)
    clauses = list(block.selects) + ([block.args["order"]] if block.args.get("order") else [])
    if any(own_aggregate(clause) for clause in clauses):
        return Skip("the block aggregates: a joined column would need grouping", record=False)
    for member in members:
        node = member.parent
        while node.parent is not block:
            node = node.parent
        if node.arg_key != "expressions":
            # (an unnamed output never gets here: prepare_query refuses it)
            return Skip("a subquery outside the block's SELECT list", record=False)
    # Estimated last, and only here: the rule's one candidate that needs statistics.
    rows = estimator.over(root).estimate(block).rows
    if rows.is_absent or rows.value > MAX_JOINED_BLOCK_ROWS:
        return Skip("the block's rows unknown or too many for a nested-loop join", record=False)
    return block
