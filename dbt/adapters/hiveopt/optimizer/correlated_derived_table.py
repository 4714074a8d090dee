"""An aggregate derived table joined back to its own input on its grouping keys, as a window
(shape A of rules/merge_correlated_aggregates.py; also on the null-supplying side of an outer join,
as Hive merges it), or a Skip saying why not.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.correlated_checks import (
    Rewrite,
    aggregate_problem,
    block_shape_problem,
    cost_decision,
    filters_covered,
)
from dbt.adapters.hiveopt.optimizer.correlated_windows import (
    aggregate_as_window,
    from_item,
    from_item_index,
    null_for_null_keys,
    window_block,
)
from dbt.adapters.hiveopt.optimizer.decisions import Skip
from dbt.adapters.hiveopt.optimizer.syntax import (
    block_conjuncts,
    columns_of,
    conjuncts,
    drop_conjuncts,
    fresh_names,
    identity,
    is_inner_join,
    read_twice_problem,
    remove_item,
    renamed,
    replace_columns,
)


@dataclass(frozen=True)
class _Aggregate:
    """The derived table's aggregate: what it reads and how its outputs map to keys and aggregates."""

    inner: exp.Select
    inner_alias: str
    ident: tuple
    same: list  # the outer block's FROM items that read the same relation
    key_names: list
    key_of: dict  # output name -> key column
    windowed: list  # (output name, aggregate expression)
    aggregates: list


@dataclass(frozen=True)
class _JoinedBack:
    """The outer relation the aggregate joins back to, on which key equalities, across which join."""

    alias: str
    equalities: dict  # key column -> its equality
    outer_join: exp.Join | None
    outer_conjuncts: list


def derived_table_window(expression, outer: Scope, s_alias: str, scopes, estimator, schema, cost_model):
    """A window for the aggregate derived table `s_alias` of the outer block, or why not."""
    aggregate = _aggregate(outer, s_alias)
    if isinstance(aggregate, Skip):
        return aggregate
    joined = _joined_back(outer.expression, s_alias, aggregate)
    if isinstance(joined, Skip):
        return joined
    where = aggregate.inner.args.get("where")
    local = conjuncts(where.this if where else None)
    problem = filters_covered(local, aggregate.inner_alias, joined.outer_conjuncts, joined.alias, aggregate.key_names)
    if problem:
        return Skip(problem)
    columns = columns_of(outer.expression, outer, joined.alias, scopes)
    columns += [k for k in aggregate.key_names if k not in columns]
    s_scope: Scope = outer.selected_sources[s_alias][1]
    skip, figures = cost_decision(
        estimator, s_scope, aggregate.inner_alias, columns, len(aggregate.windowed), cost_model
    )
    if skip:
        return Skip(skip)
    reason = (
        f"{', '.join(type(a).__name__.upper() for a in aggregate.aggregates)} over {aggregate.ident[1]} per "
        f"{', '.join(aggregate.key_names)}, joined back to {joined.alias} -> window over one read"
    )
    details = dict(relation=aggregate.ident[1], outer=joined.alias, keys=aggregate.key_names, **figures)
    return Rewrite(
        reason, details, lambda: _rewrite(expression, outer.expression, s_alias, aggregate, joined, local, columns)
    )


def _aggregate(outer: Scope, s_alias: str) -> _Aggregate | Skip:
    s_scope: Scope = outer.selected_sources[s_alias][1]
    inner = s_scope.expression
    if not isinstance(inner, exp.Select) or not inner.args.get("group"):
        return Skip("", record=False)  # not an aggregate at all: nothing worth recording
    if inner.args.get("joins"):
        return Skip("the aggregate's input is a join: not matched against the outer block")
    problem = block_shape_problem(inner)
    if problem:
        return Skip(problem)
    (inner_alias,) = list(s_scope.selected_sources) or [None]
    ident = identity(s_scope, inner_alias) if inner_alias else None
    if ident is None:
        return Skip("the aggregate reads a derived table, not a table or CTE")
    problem = read_twice_problem(s_scope, inner_alias)
    if problem:
        return Skip(problem)
    same = [a for a in outer.selected_sources if a != s_alias and identity(outer, a) == ident]
    if not same:
        return Skip("", record=False)  # an aggregate of another relation: nothing correlated here
    group_keys = inner.args["group"].expressions
    if not all(isinstance(k, exp.Column) and k.table == inner_alias for k in group_keys):
        return Skip("GROUP BY an expression, not a column")
    key_names = [k.name for k in group_keys]
    key_of: dict[str, str] = {}
    windowed: list[tuple[str, exp.Expression]] = []
    aggregates: list[exp.AggFunc] = []
    for projection in inner.selects:
        body = projection.unalias()
        if isinstance(body, exp.Column) and body.name in key_names:
            key_of[projection.alias_or_name] = body.name
            continue
        found = list(body.find_all(exp.AggFunc))
        loose = [c for c in body.find_all(exp.Column) if not c.find_ancestor(exp.AggFunc)]
        if not found or loose:
            return Skip(f"output {projection.alias_or_name} is neither a key nor an aggregate")
        aggregates += found
        windowed.append((projection.alias_or_name, body))
    problem = aggregate_problem(aggregates, allow_count=True)
    if problem:
        return Skip(problem)
    return _Aggregate(inner, inner_alias, ident, same, key_names, key_of, windowed, aggregates)


def _joined_back(select: exp.Select, s_alias: str, aggregate: _Aggregate) -> _JoinedBack | Skip:
    """The relation of the outer block the aggregate joins on every grouping key (inner join, or
    the aggregate on the null-supplying side of an outer join)."""
    outer_join = _null_supplying_join(select, s_alias)
    if isinstance(outer_join, str):
        return Skip(outer_join)
    outer_conjuncts = block_conjuncts(select, inner_only=outer_join is not None)
    on = conjuncts(outer_join.args.get("on")) if outer_join is not None else []
    for alias in aggregate.same:
        if outer_join is not None and not _preserved(select, outer_join, alias, s_alias):
            continue  # the aggregate must be the null-supplying side: T LEFT JOIN agg(T), agg(T) RIGHT JOIN T
        equalities = _key_equalities(outer_conjuncts + on, s_alias, alias, aggregate.key_of)
        if set(equalities) == set(aggregate.key_names):
            break
    else:
        return Skip("not joined back to the same relation on every grouping key")
    if outer_join is not None and (
        len(on) != len(equalities) or any(all(p is not e for e in equalities.values()) for p in on)
    ):
        return Skip(
            "the outer join's ON clause has more than the key equalities: a row failing it keeps NULLs, "
            "which a window cannot tell"
        )
    return _JoinedBack(alias, equalities, outer_join, outer_conjuncts)


def _key_equalities(predicates: list, s_alias: str, alias: str, key_of: dict) -> dict:
    """key column -> the predicate `s_alias.<output> = alias.<that key>` among `predicates`."""
    equalities = {}
    for predicate in predicates:
        if (
            isinstance(predicate, exp.EQ)
            and isinstance(predicate.this, exp.Column)
            and isinstance(predicate.expression, exp.Column)
        ):
            a, b = predicate.this, predicate.expression
            if a.table == alias:
                a, b = b, a
            if a.table == s_alias and b.table == alias and key_of.get(a.name) == b.name:
                equalities[b.name] = predicate
    return equalities


def _rewrite(expression, select, s_alias: str, aggregate: _Aggregate, joined: _JoinedBack, local, columns) -> None:
    """Replace the outer relation by a window block over its input and drop the derived table."""
    alias, key_names, windowed = joined.alias, aggregate.key_names, aggregate.windowed
    names = fresh_names(expression, len(windowed))
    windows = [
        (n, aggregate_as_window(body, aggregate.inner_alias, alias, key_names)) for n, (_, body) in zip(names, windowed)
    ]
    filters = [renamed(p, aggregate.inner_alias, alias) for p in local]
    if joined.outer_join is None:  # the inner join drops NULL keys
        filters += [exp.column(k, table=alias).is_(exp.null()).not_() for k in key_names]
    else:  # the outer join keeps them, with NULL aggregates
        windows = [(n, null_for_null_keys(w, [exp.column(k, table=alias) for k in key_names])) for n, w in windows]
    block = window_block(aggregate.inner.args["from_"].this, alias, columns, windows, filters)
    from_item(select, alias).replace(block)
    drop_conjuncts(select, list(joined.equalities.values()))
    remove_item(select, s_alias)
    key_columns = [exp.column(k, table=alias) for k in key_names]

    def key_value(key: str) -> exp.Expression:
        # Through an outer join a row with any NULL key matches no group: every output of the
        # aggregate is NULL there, its key columns too (one NULL key is that key itself).
        column = exp.column(key, table=alias)
        return null_for_null_keys(column, key_columns) if joined.outer_join and len(key_names) > 1 else column

    mapping = {(s_alias.lower(), out.lower()): key_value(key) for out, key in aggregate.key_of.items()}
    mapping.update({(s_alias.lower(), out.lower()): exp.column(n, table=alias) for n, (out, _) in zip(names, windowed)})
    replace_columns(select, mapping)


def _null_supplying_join(select: exp.Select, s_alias: str):
    """None when every join of the block is inner; the outer join that makes FROM item `s_alias`
    its null-supplying side when that is the block's only other join (Hive merges an aggregate
    on the null-supplying side of a LEFT OUTER JOIN, or of a RIGHT OUTER JOIN that is the block's
    first join, with the preserved table); else why not."""
    found = None
    joins = select.args.get("joins") or []
    for i, join in enumerate(joins):
        if is_inner_join(join):
            continue
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        outer = kind in ("", "OUTER") and not join.args.get("using") and not join.args.get("method")
        if outer and side == "LEFT" and join.this.alias_or_name == s_alias:
            found = join
            continue
        if outer and side == "RIGHT" and i == 0 and select.args["from_"].this.alias_or_name == s_alias:
            found = join
            continue
        what = " ".join(p for p in (side, kind, "JOIN") if p)
        return (
            f"the outer block has a {what}: which rows survive is not the inner join's "
            "(nor an outer join that only adds the aggregate)"
        )
    return found


def _preserved(select: exp.Select, join: exp.Join, alias: str, s_alias: str) -> bool:
    """Whether FROM item `alias` is the preserved side across `join` from the aggregate `s_alias`."""
    if (join.side or "").upper() == "RIGHT":
        return join.this.alias_or_name == alias
    return from_item_index(select, alias) < from_item_index(select, s_alias)
