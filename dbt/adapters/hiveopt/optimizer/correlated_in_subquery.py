"""An IN subquery that keeps the keys of an aggregate of a relation its outer block reads, joined
back on that key, as a window (shape C of rules/merge_correlated_aggregates.py; TPC-H Q18, the
YSmart paper's example of input and job-flow correlation):

    ... FROM T o JOIN P ON P.k = o.k WHERE P.k IN (SELECT k FROM T GROUP BY k HAVING SUM(v) > 300)
->  ... FROM (SELECT o.k, ..., SUM(o.v) OVER (PARTITION BY o.k) > 300 AS _hiveopt_0 FROM T AS o) AS o
    JOIN P ON P.k = o.k WHERE (NOT o.k IS NULL AND o._hiveopt_0)

The window partition of a row of o is the group of its key, over the same rows (the subquery reads
T whole, and so does the window), so the HAVING condition over the window is the group's. The IN
is a conjunct of WHERE, where NULL and FALSE both drop the row, and its left side is o.k or equal to
it: a row survives when its key is not NULL and its group passes HAVING, either way.

It pays where Spark shuffles the rows of o on k anyway (a sort-merge join on k, or the semi join
of o itself): the window sorts what that shuffle brings and Spark's second scan of T, its
aggregate and the semi join's shuffle are gone (TPC-H SF 1 Q18: 7.5 s -> 5.7 s). Where Spark
broadcasts o's partner, or the subquery's keys, o is not shuffled and a window would add that.

>>> from dbt.adapters.hiveopt.optimizer import OptimizerContext, optimize, StatsCatalog
>>> from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
>>> schema = {"db": {"l": {"k": "int", "q": "int"}, "o": {"k": "int", "d": "date"}}}
>>> stats = StatsCatalog.from_dict({
...     "db.l": {"row_count": 6 * 10**6, "size_bytes": 200 * 2**20, "columns": {"k": {"ndv": 1.5 * 10**6}}},
...     "db.o": {"row_count": 1.5 * 10**6, "size_bytes": 60 * 2**20, "columns": {"k": {"ndv": 1.5 * 10**6}}}})
>>> sql = ("SELECT o.k, o.d, SUM(l.q) AS s FROM db.o, db.l WHERE o.k = l.k "
...        "AND o.k IN (SELECT k FROM db.l GROUP BY k HAVING SUM(q) > 300) GROUP BY o.k, o.d")
>>> only = OptimizerConfig(rules={"reorder_joins": False, "select_join_algorithms": False})
>>> print(optimize(sql, OptimizerContext(schema=schema, statistics=stats, config=only)).sql)
... # doctest: +NORMALIZE_WHITESPACE
SELECT o.k AS k, o.d AS d, SUM(l.q) AS s FROM db.o AS o JOIN (SELECT l.q AS q, l.k AS k,
SUM(l.q) OVER (PARTITION BY l.k) > 300 AS _hiveopt_0 FROM db.l AS l) AS l ON o.k = l.k
WHERE (NOT l.k IS NULL AND l._hiveopt_0) GROUP BY o.k, o.d
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.correlated_checks import Rewrite, aggregate_problem, outer_block_problem
from dbt.adapters.hiveopt.optimizer.correlated_windows import correlated_to, from_item, over, window_block
from dbt.adapters.hiveopt.optimizer.decisions import Skip
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.human import human_bytes
from dbt.adapters.hiveopt.optimizer.syntax import (
    aggregate_shape_problem,
    block_conjuncts,
    columns_of,
    conjuncts,
    fresh_names,
    from_items,
    identity,
    local_to,
    normalized,
    read_twice_problem,
    renamed,
)


@dataclass(frozen=True)
class _KeptKeys:
    """`x IN (SELECT k FROM T a GROUP BY k HAVING h)`, a conjunct of the outer block's WHERE."""

    predicate: exp.In
    left: exp.Column
    alias: str  # the subquery's alias of T
    key: str
    having: exp.Expression
    aggregates: list
    ident: tuple[str, str]


def in_subquery_window(expression, outer: Scope, sub: Scope, scopes, estimator: Estimator, schema, cost_model):
    """A window for an IN subquery over an aggregate of a relation the outer block reads and joins
    on the key, or why not."""
    shape = _kept_keys(outer, sub)
    if isinstance(shape, Skip):
        return shape
    select: exp.Select = outer.expression
    problem = outer_block_problem(select)
    if problem:
        return Skip(problem)
    outer_conjuncts = block_conjuncts(select)
    matched = None
    for alias in outer.selected_sources:
        if identity(outer, alias) != shape.ident:
            continue
        kind = correlated_to(alias, shape.key, shape.left, outer, outer_conjuncts, schema)
        if kind:
            matched = (alias, kind)
            break
    if matched is None:
        return Skip(
            f"the IN subquery's aggregate of {shape.ident[1]} is not joined back on {shape.key} by the outer "
            "block (no input correlation): Spark's semi join stays"
        )
    alias, kind = matched
    for predicate in outer_conjuncts:
        if predicate.find(exp.Select) is None and local_to(predicate, alias):
            if any(c.name.lower() != shape.key.lower() for c in predicate.find_all(exp.Column)):
                return Skip(
                    f"the outer block filters {alias} further ({normalized(predicate)}): Spark pushes that filter "
                    "into its read, which a window would read whole"
                )
    return _decide(expression, shape, select, outer, alias, kind, scopes, estimator, cost_model)


def _kept_keys(outer: Scope, sub: Scope) -> _KeptKeys | Skip:
    inner, select = sub.expression, outer.expression
    wrapper = inner.parent
    predicate = wrapper.parent if isinstance(wrapper, exp.Subquery) else None
    if not isinstance(inner, exp.Select) or not isinstance(predicate, exp.In):
        return Skip("not an IN subquery")
    if predicate.args.get("query") is not wrapper:
        return Skip("not an IN subquery")
    where = select.args.get("where")
    if where is None or not any(c is predicate for c in conjuncts(where.this)):
        return Skip("the IN subquery is not a condition of WHERE on its own (under OR, NOT or elsewhere)")
    if not isinstance(predicate.this, exp.Column):
        return Skip(f"the IN's left side {normalized(predicate.this)} is not a column")
    group = inner.args.get("group")
    having = inner.args.get("having")
    keys = group.expressions if group else []
    if len(keys) != 1 or not isinstance(keys[0], exp.Column) or having is None:
        return Skip("the IN subquery does not keep the keys of one grouping column by a HAVING condition")
    key = keys[0]
    if len(inner.selects) != 1 or not isinstance(inner.selects[0].unalias(), exp.Column):
        return Skip("the IN subquery returns something else than its grouping column")
    returned = inner.selects[0].unalias()
    if (returned.table, returned.name.lower()) != (key.table, key.name.lower()):
        return Skip("the IN subquery returns something else than its grouping column")
    for arg, clause in (("where", "WHERE"), ("joins", "a join")):
        if inner.args.get(arg):
            return Skip(f"{clause} inside the IN subquery: the window would see other rows than the aggregate")
    items = from_items(inner)
    if len(items) != 1 or not isinstance(items[0], exp.Table):
        return Skip("the IN subquery does not aggregate one table or CTE")
    problem = aggregate_shape_problem(inner, "the IN subquery", having=True)
    if problem:
        return Skip(problem)
    aggregates = list(having.find_all(exp.AggFunc))
    if not aggregates:
        return Skip("the HAVING condition has no aggregate")
    problem = aggregate_problem(aggregates, allow_count=True)
    if problem:
        return Skip(problem)
    alias = items[0].alias_or_name
    for column in having.find_all(exp.Column):
        inside = column.find_ancestor(exp.AggFunc)
        if column.table != alias or (inside is None and column.name.lower() != key.name.lower()):
            return Skip(f"the HAVING condition reads {normalized(column)} outside its aggregates")
    ident = identity(sub, alias)
    if ident is None:
        return Skip("the IN subquery aggregates a derived table, not a table or CTE")
    problem = read_twice_problem(sub, alias)
    if problem:
        return Skip(problem)
    return _KeptKeys(predicate, predicate.this, alias, key.name, having.this, aggregates, ident)


def _decide(expression, shape: _KeptKeys, select, outer: Scope, alias, kind, scopes, estimator, cost_model):
    """Fire where Spark shuffles o's rows on the key anyway; figures for the record."""
    threshold = cost_model.broadcast_threshold_bytes
    node, _ = outer.selected_sources[alias]
    if not isinstance(node, exp.Table) or estimator.source(outer, alias).rows.is_absent:
        return Skip(f"statistics absent for {shape.ident[1]}: Spark's semi join stays")
    sizes = estimator.spark_sizes
    columns = columns_of(select, outer, alias, scopes)
    if shape.key not in columns:
        columns.append(shape.key)
    keys_size, _ = sizes.output(shape.predicate.args["query"].this)
    figures = dict(relation=shape.ident[1], outer=alias, keys=[shape.key], spark_keys_bytes=_rounded(keys_size))
    if keys_size <= threshold:
        return Skip(
            f"Spark broadcasts the IN subquery's keys (it sizes them at {human_bytes(keys_size)}): {alias} is not "
            "shuffled on the key, a window would add that shuffle"
        )
    shuffled = f"{alias} is semi-joined on {shape.key} itself"
    if kind != "direct":
        partner = shape.left.table
        own, other = sizes.source(select, alias, columns), sizes.source(select, partner)
        figures.update(spark_bytes=_rounded(own), partner=partner, partner_spark_bytes=_rounded(other))
        if min(own, other) <= threshold:
            small = alias if own <= other else partner
            return Skip(
                f"Spark broadcasts {small} (it sizes it at {human_bytes(min(own, other))}): {alias} is not shuffled "
                f"on {shape.key}, a window would add that shuffle"
            )
        shuffled = f"{alias} and {partner} are sort-merge joined on {shape.key}"

    def plan() -> None:
        (name,) = fresh_names(expression, 1)
        key = exp.column(shape.key, table=alias)
        value = over(renamed(shape.having, shape.alias, alias), [key.copy()])
        item = from_item(select, alias)
        kept = exp.and_(exp.not_(key.copy().is_(exp.null())), exp.column(name, table=alias))
        shape.predicate.replace(exp.paren(kept))
        item.replace(window_block(item, alias, columns, [(name, value)], []))

    functions = ", ".join(type(a).__name__.upper() for a in shape.aggregates)
    reason = (
        f"IN over {functions} of {shape.ident[1]} per {shape.key}, joined back -> window over one read of {alias} "
        f"({shuffled} anyway)"
    )
    return Rewrite(reason, figures, plan)


def _rounded(size: float) -> float | None:
    return None if size == float("inf") else round(size)
