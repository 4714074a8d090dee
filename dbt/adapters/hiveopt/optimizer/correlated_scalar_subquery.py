"""A correlated scalar subquery that aggregates relations of its outer block, as a window (shape B
of rules/merge_correlated_aggregates.py): detected (`_Correlated`), matched onto the outer block
(`_Matched`), then rewritten as a window over the outer block's whole join or over the input alone,
or a Skip saying why not.
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
    outer_block_problem,
)
from dbt.adapters.hiveopt.optimizer.correlated_windows import (
    aggregate_as_window,
    from_item,
    match_outer,
    null_for_null_keys,
    outer_columns,
    rewrite_whole_block,
    window_block,
)
from dbt.adapters.hiveopt.optimizer.decisions import Skip
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.human import human_bytes
from dbt.adapters.hiveopt.optimizer.statistics import Estimate
from dbt.adapters.hiveopt.optimizer.syntax import (
    block_conjuncts,
    columns_of,
    conjuncts,
    fresh_names,
    from_items,
    identity,
    nested_join,
    non_inner_join,
    normalized,
    read_twice_problem,
    renamed,
    renamed_all,
)

# Aggregates that keep their value when every row of a key is repeated the same number of times
# (a join with other relations on the key only).
DUPLICATE_INSENSITIVE_AGGREGATES = (exp.Avg, exp.Min, exp.Max)


@dataclass(frozen=True)
class _Correlated:
    """A correlated scalar subquery that aggregates relations of the outer block: its parts."""

    select: exp.Select
    inner: exp.Select
    wrapper: exp.Subquery
    projection: exp.Expression
    aggregates: list
    inner_aliases: list
    idents: dict
    local: list
    pairs: list


@dataclass(frozen=True)
class _Matched:
    """How the subquery's relations map onto the outer block's."""

    mapping: dict
    direct: bool
    keys: list
    outer_conjuncts: list
    relations: str


def scalar_subquery_window(expression, outer: Scope, sub: Scope, scopes, estimator, schema, cost_model):
    """A window for a correlated scalar subquery (the outer block's whole join, or the input
    alone), or why not."""
    shape = _correlated_shape(outer, sub)
    if isinstance(shape, Skip):
        return shape
    matched = _match_subquery(shape, outer, schema)
    if isinstance(matched, Skip):
        return matched
    whole_problem = _whole_block_problem(expression, shape, matched, outer, sub, scopes, estimator)
    if isinstance(whole_problem, Skip):
        return whole_problem
    others = [a for a in outer.selected_sources if a.lower() not in {o.lower() for o in matched.mapping.values()}]
    if whole_problem is not None and len(shape.inner_aliases) > 1:
        return Skip(whole_problem + ": the window over the outer block would see other rows than the aggregate")
    if whole_problem is None and (others or len(shape.inner_aliases) > 1):
        return _window_over_outer_block(expression, shape, matched, outer, sub, scopes, estimator, cost_model)
    return _window_over_input(expression, shape, matched, outer, sub, scopes, estimator, cost_model)


def _correlated_shape(outer: Scope, sub: Scope) -> _Correlated | Skip:
    select, inner = outer.expression, sub.expression
    wrapper = inner.parent
    if (
        not isinstance(inner, exp.Select)
        or not isinstance(wrapper, exp.Subquery)
        or isinstance(wrapper.parent, (exp.In, exp.Any, exp.All, exp.Exists))
    ):
        return Skip("a correlated IN / EXISTS / ANY subquery, not a scalar one: left to Spark")
    clause = wrapper
    while clause.parent is not select:
        clause = clause.parent
    if clause.arg_key != "where":
        return Skip(f"a correlated scalar subquery in {clause.arg_key.upper()}: only WHERE is handled")
    if len(inner.selects) != 1:
        return Skip("the subquery returns several columns")
    projection = inner.selects[0].unalias()
    aggregates = list(projection.find_all(exp.AggFunc))
    if not aggregates:
        return Skip("the subquery does not aggregate: not a correlated aggregate")
    if inner.args.get("group"):
        return Skip("GROUP BY inside a scalar subquery")
    problem = block_shape_problem(inner) or aggregate_problem(aggregates, allow_count=False)
    if problem:
        return Skip(problem)
    inner_items = from_items(inner)
    if non_inner_join(inner) or any(nested_join(i) is not None for i in inner_items):
        return Skip("the subquery's relations are not joined by inner joins only")
    inner_aliases = [i.alias_or_name for i in inner_items]
    idents = {a: identity(sub, a) for a in inner_aliases}
    if not inner_aliases or any(i is None for i in idents.values()):
        return Skip("the aggregate reads a derived table, not a table or CTE")
    problem = next(filter(None, (read_twice_problem(sub, a) for a in inner_aliases)), None)
    if problem:
        return Skip(problem)
    if any(c.table not in inner_aliases for c in projection.find_all(exp.Column)):
        return Skip("the subquery's result reads outer columns")
    split = _correlation_pairs(inner, inner_aliases)
    if isinstance(split, Skip):
        return split
    local, pairs = split
    return _Correlated(select, inner, wrapper, projection, aggregates, inner_aliases, idents, local, pairs)


def _correlation_pairs(inner: exp.Select, inner_aliases: list) -> tuple[list, list] | Skip:
    """(the subquery's own predicates, its correlation equalities as (alias, column, outer column))."""
    local, pairs = [], []
    for predicate in block_conjuncts(inner):
        columns = list(predicate.find_all(exp.Column))
        outside = [c for c in columns if c.table not in inner_aliases]
        if not outside:
            local.append(predicate)
            continue
        if (
            isinstance(predicate, exp.EQ)
            and isinstance(predicate.this, exp.Column)
            and isinstance(predicate.expression, exp.Column)
            and len(outside) == 1
        ):
            mine = predicate.this if predicate.this.table in inner_aliases else predicate.expression
            pairs.append((mine.table, mine.name, outside[0]))
            continue
        return Skip(f"a correlated predicate other than an equality: {normalized(predicate)}")
    if not pairs:
        return Skip("no correlation equality found")
    return local, pairs


def _match_subquery(shape: _Correlated, outer: Scope, schema) -> _Matched | Skip:
    select = shape.select
    problem = outer_block_problem(select, star=False)
    if problem:
        return Skip(problem)
    outer_conjuncts = block_conjuncts(select)
    relations = ", ".join(sorted({shape.idents[a][1] for a in shape.inner_aliases}))
    if not all(any(identity(outer, o) == shape.idents[a] for o in outer.selected_sources) for a in shape.inner_aliases):
        return Skip(
            "the aggregate reads another relation than the outer block (no input correlation): Spark's "
            "decorrelated aggregate and join stay"
        )
    match = match_outer(shape.inner_aliases, shape.idents, shape.local, shape.pairs, outer, outer_conjuncts, schema)
    if isinstance(match, str):
        return Skip(match)
    mapping, direct = match
    keys = [(mapping[a], name) for a, name, _ in shape.pairs]
    return _Matched(mapping, direct, keys, outer_conjuncts, relations)


def _whole_block_problem(
    expression, shape: _Correlated, matched: _Matched, outer: Scope, sub: Scope, scopes, estimator
):
    """Why a window over the outer block's whole join would not do (None: it would), or a Skip
    when no window does (the outer block filters the input further)."""
    select, mapping = shape.select, matched.mapping
    key_set = {(t.lower(), n.lower()) for t, n in matched.keys} | {
        (c.table.lower(), c.name.lower()) for _, _, c in shape.pairs
    }
    image = {o.lower() for o in mapping.values()}
    renamed_local = {normalized(renamed_all(p, mapping)) for p in shape.local}
    extra = [c for c in matched.outer_conjuncts if c.find(exp.Select) is None and normalized(c) not in renamed_local]
    whole_problem = None
    for predicate in extra:
        own = [(c.table.lower(), c.name.lower()) for c in predicate.find_all(exp.Column)]
        if not any(t in image and (t, n) not in key_set for t, n in own):
            continue
        if all(t in image for t, _ in own):
            return Skip(
                f"the outer block filters {', '.join(sorted(image))} further ({normalized(predicate)}): Spark "
                "pushes that filter into its read of the input, which a window would read whole (measured 2.1x "
                "slower)"
            )
        whole_problem = whole_problem or (
            f"the outer block joins the input on other columns than the key ({normalized(predicate)})"
        )
    others = [a for a in outer.selected_sources if a.lower() not in image]
    if others and not whole_problem:
        loose = [a for a in shape.aggregates if not isinstance(a, DUPLICATE_INSENSITIVE_AGGREGATES)]
        if loose:
            whole_problem = (
                f"{type(loose[0]).__name__.upper()} over a join with {', '.join(others)} would count "
                "their rows per key too"
            )
    if whole_problem is None and any(
        j.args.get("on") is not None and j.args["on"].find(exp.Select) for j in select.args.get("joins") or []
    ):
        whole_problem = "a subquery in an ON clause"
    if whole_problem is None and any(isinstance(p.unalias(), exp.Star) for p in select.selects):
        whole_problem = "the outer block selects *"
    if whole_problem is None and len(shape.inner_aliases) == 1 and others:
        # The window over the input alone is valid too: window over the fewer rows.
        rows, _ = _outer_block_figures(expression, select, outer, scopes, estimator)
        inner_rows = estimator.join_block(sub).rows
        if not rows.is_absent and not inner_rows.is_absent and rows.value > inner_rows.value:
            whole_problem = "the outer block's join has more rows than the input"
    return whole_problem


def _window_over_outer_block(
    expression, shape: _Correlated, matched: _Matched, outer: Scope, sub: Scope, scopes, estimator, cost_model
) -> Rewrite | Skip:
    rows, width = _outer_block_figures(expression, shape.select, outer, scopes, estimator)
    recompute = Estimate.exact(0)
    redone = []
    for a in shape.inner_aliases:
        stage = cost_model.recompute(estimator, sub, a)
        recompute = recompute + stage.cost
        redone.append(stage.redone)
    if recompute.is_absent or rows.is_absent or width.is_absent:
        return Skip("statistics absent for the aggregate's input or the outer block: Spark's plan stays")
    window = cost_model.window(rows, width.value, 1)
    figures = dict(
        recompute_bytes=round(recompute.value),
        window_shuffle_bytes=round(window.value),
        window_rows=round(rows.value),
        redone="; ".join(redone),
        form="window over the outer block",
    )
    if not cost_model.window_pays(recompute, window):
        return Skip(
            f"reading the input again redoes {'; '.join(redone)}: {human_bytes(recompute.value)} against "
            f"{human_bytes(window.value)} to shuffle the outer block for a window; Spark's aggregate and join stay"
        )

    def plan_whole() -> None:
        rewrite_whole_block(
            expression, shape.select, shape.wrapper, shape.projection, matched.mapping, matched.keys, matched.direct
        )

    reason = (
        f"correlated {', '.join(type(a).__name__.upper() for a in shape.aggregates)} over {matched.relations} on "
        f"{', '.join(f'{t}.{n}' for t, n in matched.keys)} -> window over one read of the outer block's join"
    )
    details = dict(
        relation=matched.relations,
        outer=sorted(matched.mapping.values()),
        keys=[n for _, n in matched.keys],
        **figures,
    )
    return Rewrite(reason, details, plan_whole)


def _window_over_input(
    expression, shape: _Correlated, matched: _Matched, outer: Scope, sub: Scope, scopes, estimator, cost_model
) -> Rewrite | Skip:
    """The window over the input alone (one relation); the outer block's other relations join it."""
    (inner_alias,) = shape.inner_aliases
    chosen = matched.mapping[inner_alias]
    key_names = [n for _, n in matched.keys]
    columns = columns_of(shape.select, outer, chosen, scopes)
    skip, figures = cost_decision(estimator, sub, inner_alias, columns, 1, cost_model)
    if skip:
        return Skip(skip)

    def plan() -> None:
        (name,) = fresh_names(expression, 1)
        value = aggregate_as_window(shape.projection, inner_alias, chosen, key_names)
        if matched.direct:  # the subquery of a row whose key is NULL matches nothing: NULL
            value = null_for_null_keys(value, [exp.column(k, table=chosen) for k in key_names])
        filters = [renamed(p, inner_alias, chosen) for p in shape.local]
        block = window_block(shape.inner.args["from_"].this, chosen, columns, [(name, value)], filters)
        shape.wrapper.replace(exp.paren(exp.column(name, table=chosen)))
        from_item(shape.select, chosen).replace(block)

    reason = (
        f"correlated {', '.join(type(a).__name__.upper() for a in shape.aggregates)} over {matched.relations} on "
        f"{', '.join(key_names)} -> window over one read of {chosen}"
    )
    return Rewrite(reason, dict(relation=matched.relations, outer=chosen, keys=key_names, **figures), plan)


def _outer_block_figures(expression, select: exp.Select, outer: Scope, scopes, estimator: Estimator):
    """(rows, bytes per row) of the outer block's join without its subquery conjuncts: what the
    window would shuffle. The rows come from a copy of the query without those conjuncts (a
    subquery's selectivity is a guess the window does not pay)."""
    index = next(i for i, s in enumerate(expression.find_all(exp.Select)) if s is select)
    copy = expression.copy()
    twin = next(s for i, s in enumerate(copy.find_all(exp.Select)) if i == index)
    where = twin.args.get("where")
    kept = [c for c in conjuncts(where.this if where else None) if c.find(exp.Select) is None]
    twin.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
    twin_estimator = estimator.over(copy)
    rows = twin_estimator.join_block(twin_estimator.scopes[id(twin)]).rows
    per_alias: dict[str, list[str]] = {}
    for alias, name in outer_columns(select, set(outer.selected_sources)):
        per_alias.setdefault(alias, []).append(name)
    width = Estimate.exact(0)
    for alias, names in per_alias.items():
        width = width + estimator.source(outer, alias).width(names)
    return rows, width
