"""Join shapes for partition pruning (rules/prune_partitions_from_small_side.py): which side of a
join may be filtered by the other side's keys, the small side's own filters, the relation of a
block to wrap, and the table column a join key comes from. Pure functions of the qualified tree.

>>> import sqlglot
>>> from sqlglot.optimizer.scope import build_scope
>>> select = sqlglot.parse_one(
...     "SELECT f.v FROM db.f AS f JOIN (SELECT d.k AS k FROM db.d AS d GROUP BY d.k) AS g ON f.k = g.k "
...     "WHERE g.k > 1 AND f.v > 2")
>>> join = select.args["joins"][0]
>>> unprunable([join], join, big="g", small="f", label="top")
>>> [p.sql() for p in small_filters(select, join, "g", where_ok=True)]
['g.k > 1']
>>> trace(build_scope(select), "g", "k")
KeySource(table='db.d', column='k', aggregated=True)
>>> left = sqlglot.parse_one("SELECT f.v FROM db.f AS f LEFT JOIN db.d AS d ON f.k = d.k").args["joins"][0]
>>> unprunable([left], left, big="f", small="d", label="top").reason
'the preserved side of a LEFT join: never pruned'
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.decisions import Skip
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.syntax import (
    conjuncts,
    from_items,
    is_inner_join,
    nested_join,
    own_filter,
)

# How many derived tables and CTEs a key is traced through to its table.
_MAX_TRACE_DEPTH = 32


@dataclass(frozen=True)
class KeySource:
    """The table column a block's join key comes from, and whether an aggregate grouped by it
    stands between them."""

    table: str  # `db.table`, lower case
    column: str
    aggregated: bool


def unprunable(joins: list[exp.Join], join: exp.Join, big: str, small: str, label: str) -> Skip | None:
    """Why the `big` side of `join` (one of the block's `joins`) may not be filtered by `small`'s
    keys, or None: it may."""
    right = join.this.alias_or_name
    why_not = _not_prunable(join, big == right)
    if why_not is None and big != right and _preserved_earlier(joins, join):
        why_not = "an earlier RIGHT or FULL join of the block preserves it"
    return None if why_not is None else Skip(why_not, block=label, big=big, small=small)


def _not_prunable(join: exp.Join, big_is_right: bool) -> str | None:
    """Why the big side of this join may not be filtered (None: it may)."""
    side, kind = (join.side or "").upper(), (join.kind or "").upper()
    if kind == "ANTI":
        return "an anti join keeps the rows that do not match: never pruned"
    if kind == "SEMI":
        return "the right side of a semi join is its filter" if big_is_right else None
    if side == "FULL":
        return "the preserved side of a FULL OUTER join: never pruned"
    if side == "LEFT" and not big_is_right:
        return "the preserved side of a LEFT join: never pruned"
    if side == "RIGHT":
        return (
            "the preserved side of a RIGHT join: never pruned"
            if big_is_right
            else "the null-supplying side of a RIGHT join: not handled (written as a LEFT join it is)"
        )
    return None


def _preserved_earlier(joins: list[exp.Join], join: exp.Join) -> bool:
    """An earlier relation is preserved when an earlier join of the block is RIGHT or FULL."""
    for other in joins:
        if other is join:
            return False
        if (other.side or "").upper() in ("RIGHT", "FULL"):
            return True
    return False


def small_filters(select: exp.Select, join: exp.Join, small: str, where_ok: bool) -> list[exp.Expression]:
    """The small side's own filters that every row reaching the output satisfies: WHERE and
    inner-join ON conjuncts reading only it (only when no RIGHT or FULL join can bring back rows
    the join dropped), and the ON conjuncts of the join itself when the small side is its inner
    or semi right side. Sorted, so the join order the earlier rules chose does not matter."""
    found: list[exp.Expression] = []
    if where_ok:
        where = select.args.get("where")
        found += conjuncts(where.this if where else None)
        found += [p for j in select.args["joins"] if is_inner_join(j, cross=False) for p in conjuncts(j.args.get("on"))]
    kind = (join.kind or "").upper()
    if join.this.alias_or_name == small and (is_inner_join(join, cross=False) or kind == "SEMI"):
        found += conjuncts(join.args.get("on"))
    unique = {p.sql(DIALECT): p for p in found if own_filter(p, small)}
    return [unique[k].copy() for k in sorted(unique)]


def relation_node(select: exp.Select, alias: str) -> exp.Expression | None:
    """The block's FROM or JOIN item named `alias`, unless it is a parenthesized join."""
    for node in from_items(select):
        if node.alias_or_name == alias and nested_join(node) is None:
            return node
    return None


def trace(scope: Scope, alias: str, name: str) -> KeySource | Skip:
    """The table column a block's column comes from, through derived tables and CTEs that read one
    relation (a filter on it can be pushed to that table's scan), or a Skip saying why not."""
    aggregated = False
    for _ in range(_MAX_TRACE_DEPTH):
        source = scope.sources.get(alias)
        if isinstance(source, exp.Table):
            return KeySource(".".join(p for p in (source.db, source.name) if p).lower(), name.lower(), aggregated)
        if not isinstance(source, Scope) or not isinstance(source.expression, exp.Select):
            return Skip(f"{alias} is not a table, a derived table or a CTE over one SELECT")
        inner: exp.Select = source.expression
        if inner.args.get("joins") or inner.args.get("limit") or inner.args.get("offset") or inner.find(exp.Window):
            return Skip(f"{alias} has a join, a LIMIT or a window function: the filter would not reach one scan")
        projection = next((p for p in inner.selects if p.alias_or_name.lower() == name.lower()), None)
        target = projection.this if isinstance(projection, exp.Alias) else projection
        if not isinstance(target, exp.Column):
            return Skip(f"{alias}.{name} is computed, not a column of the table")
        group = inner.args.get("group")
        if group is not None:
            if not any(
                isinstance(g, exp.Column) and g.table == target.table and g.name == target.name
                for g in group.expressions
            ):
                return Skip(f"{alias}.{name} is not a grouping column")
            aggregated = True
        elif inner.find(exp.AggFunc):
            return Skip(f"{alias} is a global aggregate")
        scope, alias, name = source, target.table, target.name
    return Skip("too deeply nested")
