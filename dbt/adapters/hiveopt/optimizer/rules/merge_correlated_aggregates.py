"""Merge an aggregate joined back to its own input into a window over one pass (Hive's
Correlation Optimizer, input correlation; YSmart).

What it does, when it fires and what was measured: docs/rules/merge_correlated_aggregates.md.

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
MIN(f.v) OVER (PARTITION BY f.k) AS _hiveopt_1 FROM db.p AS p CROSS JOIN db.f AS f
WHERE p.k = f.k AND p.brand = 'x') AS _hiveopt_0 WHERE _hiveopt_0.v = (_hiveopt_0._hiveopt_1)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.correlated_windows import (
    aggregate_as_window,
    from_item,
    from_item_index,
    match_outer,
    null_for_null_keys,
    outer_columns,
    rewrite_whole_block,
    window_block,
)
from dbt.adapters.hiveopt.optimizer.cost_model import CostModel
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog, Skip
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.statistics import Estimate
from dbt.adapters.hiveopt.optimizer.syntax import (
    WINDOWABLE_AGGREGATES,
    aggregate_shape_problem,
    block_conjuncts,
    columns_of,
    conjuncts,
    drop_conjuncts,
    fresh_names,
    from_items,
    identity,
    is_inner_join,
    local_to,
    nested_join,
    non_inner_join,
    normalized,
    remove_item,
    renamed,
    renamed_all,
    replace_columns,
)

# Rewrites per query; each one restarts the scan of the (changed) query.
MAX_REWRITES = 16
# Aggregates that keep their value when every row of a key is repeated the same number of times
# (a join with other relations on the key only).
DUPLICATE_INSENSITIVE_AGGREGATES = (exp.Avg, exp.Min, exp.Max)

Plan = Callable[[], None]


def merge_correlated_aggregates(
    expression: exp.Expression, schema, estimator: Estimator, cost_model: CostModel, log: DecisionLog
) -> exp.Expression:
    """Rewrite each aggregate joined back to its own input (a derived table, or a correlated
    scalar subquery) as a window over one read, where the cost model says a second read costs
    more than the window's shuffle. Details: docs/rules/merge_correlated_aggregates.md.

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


def _mb(value: float) -> str:
    return f"{value / 1024 / 1024:.1f} MB"


def _next_rewrite(
    expression, schema, estimator: Estimator, cost_model: CostModel, log, decided: set[str]
) -> Plan | None:
    scopes = list(estimator.scopes.values())
    for scope in scopes:
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        candidates = [("scalar", sub) for sub in scope.subquery_scopes if sub.is_correlated_subquery]
        candidates += [
            ("derived", alias)
            for alias, (node, source) in scope.selected_sources.items()
            if isinstance(source, Scope) and source.is_derived_table
        ]
        for kind, candidate in candidates:
            node = candidate.expression if kind == "scalar" else scope.selected_sources[candidate][0]
            key = f"{kind}:{normalized(node)}"
            if key in decided:
                continue
            decided.add(key)
            analyse = _scalar_subquery if kind == "scalar" else _derived_aggregate
            outcome = analyse(expression, scope, candidate, scopes, estimator, schema, cost_model)
            label = "correlated scalar subquery" if kind == "scalar" else f"derived table {candidate}"
            if isinstance(outcome, Skip):
                outcome.record_in(log, candidate=label)
                continue
            log.fired(outcome.reason, candidate=label, **outcome.details)
            return outcome.plan
    return None


# --- shared checks -----------------------------------------------------------------------------
def _block_shape_problem(select: exp.Select) -> str | None:
    """Why an aggregate block cannot become a window, else None (joins are checked by the caller)."""
    problem = aggregate_shape_problem(select, "the aggregate")
    if problem and problem.startswith("a non-deterministic"):
        return problem + ": evaluating it once instead of twice changes results"
    return problem


def _aggregate_problem(aggregates: list[exp.AggFunc], allow_count: bool) -> str | None:
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


def _filters_covered(
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


def _cost_decision(
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
            f"reading the input again redoes {stage.redone}: {_mb(recompute.value)} against {_mb(window.value)} to "
            "shuffle for a window; Spark's aggregate and join stay"
        ), figures
    return None, figures


# --- shape B: correlated scalar subquery ---------------------------------------------------------
@dataclass(frozen=True)
class _Rewrite:
    """A candidate to rewrite: the reason and figures for the record, and the plan that edits the tree."""

    reason: str
    details: dict
    plan: Plan


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


def _scalar_subquery(expression, outer: Scope, sub: Scope, scopes, estimator, schema, cost_model):
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
    problem = _block_shape_problem(inner) or _aggregate_problem(aggregates, allow_count=False)
    if problem:
        return Skip(problem)
    inner_items = from_items(inner)
    if non_inner_join(inner) or any(nested_join(i) is not None for i in inner_items):
        return Skip("the subquery's relations are not joined by inner joins only")
    inner_aliases = [i.alias_or_name for i in inner_items]
    idents = {a: identity(sub, a) for a in inner_aliases}
    if not inner_aliases or any(i is None for i in idents.values()):
        return Skip("the aggregate reads a derived table, not a table or CTE")
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
    join = non_inner_join(select)
    if join:
        return Skip(f"the outer block has a {join}: which rows survive is not the inner join's")
    if any(nested_join(i) is not None for i in from_items(select)):
        return Skip("the outer block has a nested join: not matched")
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
) -> _Rewrite | Skip:
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
            f"reading the input again redoes {'; '.join(redone)}: {_mb(recompute.value)} against "
            f"{_mb(window.value)} to shuffle the outer block for a window; Spark's aggregate and join stay"
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
    return _Rewrite(reason, details, plan_whole)


def _window_over_input(
    expression, shape: _Correlated, matched: _Matched, outer: Scope, sub: Scope, scopes, estimator, cost_model
) -> _Rewrite | Skip:
    """The window over the input alone (one relation); the outer block's other relations join it."""
    (inner_alias,) = shape.inner_aliases
    chosen = matched.mapping[inner_alias]
    key_names = [n for _, n in matched.keys]
    columns = columns_of(shape.select, outer, chosen, scopes)
    skip, figures = _cost_decision(estimator, sub, inner_alias, columns, 1, cost_model)
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
    return _Rewrite(reason, dict(relation=matched.relations, outer=chosen, keys=key_names, **figures), plan)


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


# --- shape A: aggregate derived table joined back ------------------------------------------------
def _derived_aggregate(expression, outer: Scope, s_alias: str, scopes, estimator, schema, cost_model):
    select = outer.expression
    s_scope: Scope = outer.selected_sources[s_alias][1]
    inner = s_scope.expression
    if not isinstance(inner, exp.Select) or not inner.args.get("group"):
        return Skip("", record=False)  # not an aggregate at all: nothing worth recording
    if inner.args.get("joins"):
        return Skip("the aggregate's input is a join: not matched against the outer block")
    problem = _block_shape_problem(inner)
    if problem:
        return Skip(problem)
    (inner_alias,) = list(s_scope.selected_sources) or [None]
    ident = identity(s_scope, inner_alias) if inner_alias else None
    if ident is None:
        return Skip("the aggregate reads a derived table, not a table or CTE")
    same = [a for a in outer.selected_sources if a != s_alias and identity(outer, a) == ident]
    if not same:
        return Skip("", record=False)  # an aggregate of another relation: nothing correlated here
    group_keys = inner.args["group"].expressions
    if not all(isinstance(k, exp.Column) and k.table == inner_alias for k in group_keys):
        return Skip("GROUP BY an expression, not a column")
    key_names = [k.name for k in group_keys]
    key_of: dict[str, str] = {}  # s's output name -> key column
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
    problem = _aggregate_problem(aggregates, allow_count=True)
    if problem:
        return Skip(problem)
    outer_join = _null_supplying_join(select, s_alias)
    if isinstance(outer_join, str):
        return Skip(outer_join)
    outer_conjuncts = block_conjuncts(select, inner_only=outer_join is not None)
    for alias in same:
        if outer_join is not None and not _preserved(select, outer_join, alias, s_alias):
            continue  # the aggregate must be the null-supplying side: T LEFT JOIN agg(T), agg(T) RIGHT JOIN T
        equalities = {}
        for predicate in outer_conjuncts + (conjuncts(outer_join.args.get("on")) if outer_join is not None else []):
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
        if set(equalities) == set(key_names):
            break
    else:
        return Skip("not joined back to the same relation on every grouping key")
    if outer_join is not None:
        on = conjuncts(outer_join.args.get("on"))
        if len(on) != len(equalities) or any(all(p is not e for e in equalities.values()) for p in on):
            return Skip(
                "the outer join's ON clause has more than the key equalities: a row failing it keeps NULLs, "
                "which a window cannot tell"
            )
    where = inner.args.get("where")
    local = conjuncts(where.this if where else None)
    problem = _filters_covered(local, inner_alias, outer_conjuncts, alias, key_names)
    if problem:
        return Skip(problem)
    columns = columns_of(select, outer, alias, scopes)
    columns += [k for k in key_names if k not in columns]
    skip, figures = _cost_decision(estimator, s_scope, inner_alias, columns, len(windowed), cost_model)
    if skip:
        return Skip(skip)

    def plan() -> None:
        names = fresh_names(expression, len(windowed))
        windows = [
            (n, aggregate_as_window(body, inner_alias, alias, key_names)) for n, (_, body) in zip(names, windowed)
        ]
        filters = [renamed(p, inner_alias, alias) for p in local]
        if outer_join is None:  # the inner join drops NULL keys
            filters += [exp.column(k, table=alias).is_(exp.null()).not_() for k in key_names]
        else:  # the outer join keeps them, with NULL aggregates (the key columns are NULL already)
            windows = [(n, null_for_null_keys(w, [exp.column(k, table=alias) for k in key_names])) for n, w in windows]
        block = window_block(inner.args["from_"].this, alias, columns, windows, filters)
        from_item(select, alias).replace(block)
        drop_conjuncts(select, list(equalities.values()))
        remove_item(select, s_alias)
        mapping = {(s_alias.lower(), out.lower()): exp.column(key, table=alias) for out, key in key_of.items()}
        mapping.update(
            {(s_alias.lower(), out.lower()): exp.column(n, table=alias) for n, (out, _) in zip(names, windowed)}
        )
        replace_columns(select, mapping)

    reason = (
        f"{', '.join(type(a).__name__.upper() for a in aggregates)} over {ident[1]} per {', '.join(key_names)}, "
        f"joined back to {alias} -> window over one read"
    )
    return _Rewrite(reason, dict(relation=ident[1], outer=alias, keys=key_names, **figures), plan)
