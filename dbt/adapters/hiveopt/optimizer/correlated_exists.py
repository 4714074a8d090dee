"""EXISTS and NOT EXISTS subqueries over the relation their outer block reads, correlated on its key,
as windows over one read (shape D of rules/merge_correlated_aggregates.py; TPC-H Q21):

    ... FROM T o ... WHERE EXISTS (SELECT * FROM T a WHERE a.k = o.k AND a.s <> o.s)
                   AND NOT EXISTS (SELECT * FROM T b WHERE b.k = o.k AND b.s <> o.s AND p(b))
->  ... FROM (SELECT o.k, o.s, ...,
                     MIN(o.s) OVER (PARTITION BY o.k) AS _hiveopt_0, MAX(o.s) OVER (...) AS _hiveopt_1,
                     MIN(CASE WHEN p(o) THEN o.s END) OVER (...) AS _hiveopt_2, MAX(...) AS _hiveopt_3
              FROM T AS o) AS o ...
    WHERE (NOT o.k IS NULL AND COALESCE(o._hiveopt_0 <> o.s OR o._hiveopt_1 <> o.s, FALSE))
      AND (o.k IS NULL OR NOT COALESCE(o._hiveopt_2 <> o.s OR o._hiveopt_3 <> o.s, FALSE))

Why it is the same: the window partition of a row of o holds every row of T with its key, the
rows the subquery reads (it reads T whole but for its own filters `p`, which go into the CASE).
A row of the partition "differs" when its `s` is not NULL and not the outer value x; one does
exactly when the partition's smallest or largest such `s` is not x (both are NULL when no row has
an `s`, and `<>` of a NULL x is NULL: COALESCE makes those "none"). The subquery's `a.k = o.k` is
never true for a NULL o.k: the guard on the key says so. Without a `<>` the window counts the
matching rows. Both columns of a `<>` must have one type (across types Spark casts, and an order
of strings is not one of numbers) and not a floating one; so must the keys.

It pays where Spark shuffles T's rows on the key anyway: the subquery's rows are too big to
broadcast, so the semi (anti) join is a sort-merge join that shuffles them and o's rows. The
window shuffles T once instead, and the estimate of bytes shuffled decides: o's rows after its own
filters plus each subquery's rows must come to 1.25x T's rows with the columns o and the windows
need, or more (calibrated; TPC-H SF 1 Q21, estimated 1.42x: 4.7 s -> 3.1 s).

>>> from dbt.adapters.hiveopt.optimizer import OptimizerContext, optimize, StatsCatalog
>>> from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
>>> schema = {"db": {"l": {"k": "bigint", "s": "bigint", "late": "boolean"}}}
>>> stats = StatsCatalog.from_dict({"db.l": {"row_count": 6 * 10**6, "size_bytes": 200 * 2**20}})
>>> sql = ("SELECT o.s, COUNT(*) AS n FROM db.l AS o WHERE o.late "
...        "AND EXISTS (SELECT * FROM db.l a WHERE a.k = o.k AND a.s <> o.s) GROUP BY o.s")
>>> only = OptimizerConfig(rules={"reorder_joins": False, "select_join_algorithms": False})
>>> print(optimize(sql, OptimizerContext(schema=schema, statistics=stats, config=only)).sql)
... # doctest: +NORMALIZE_WHITESPACE
SELECT o.s AS s, COUNT(*) AS n FROM (SELECT o.k AS k, o.s AS s, o.late AS late,
MIN(o.s) OVER (PARTITION BY o.k) AS _hiveopt_0, MAX(o.s) OVER (PARTITION BY o.k) AS _hiveopt_1
FROM db.l AS o) AS o WHERE o.late AND (NOT o.k IS NULL AND COALESCE(o._hiveopt_0 <> o.s
OR o._hiveopt_1 <> o.s, FALSE)) GROUP BY o.s
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.correlated_checks import Rewrite, outer_block_problem
from dbt.adapters.hiveopt.optimizer.correlated_windows import correlated_to, from_item, type_of, window_block
from dbt.adapters.hiveopt.optimizer.decisions import Skip
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.human import human_bytes
from dbt.adapters.hiveopt.optimizer.spark_sizes import row_size
from dbt.adapters.hiveopt.optimizer.syntax import (
    aggregate_shape_problem,
    block_conjuncts,
    columns_of,
    conjuncts,
    fresh_names,
    from_items,
    identity,
    normalized,
    own_aggregate,
    read_twice_problem,
    renamed,
)

# Fire where the semi and anti joins' shuffles are estimated at this many times the window's. From
# bench/calibrate.py --parts exists (docs/calibration.md): every estimate from 1.87x up won
# (1.59-2.56x) and TPC-H Q21's 1.42x won 1.49x; a lone EXISTS estimated at 1.01x lost (0.64x: the
# window's sort costs more than its bytes say), 0.72-0.97x ran within 0.96-1.12x.
MIN_JOINS_TO_WINDOW_RATIO = 1.25

# Types whose equality is the order's (MIN/MAX) and the grouping's: no floating point (NaN, -0.0).
ORDERED_TYPES = ("tinyint", "smallint", "int", "integer", "bigint", "string", "varchar", "char", "date", "decimal")


@dataclass(frozen=True)
class _Exists:
    """`[NOT] EXISTS (SELECT ... FROM T a WHERE a.k = x.j ... [AND a.s <> y.t] [AND p(a)])`, a
    conjunct of the outer block's WHERE."""

    conjunct: exp.Expression  # the Exists, or the Not around it
    negated: bool
    alias: str  # the subquery's alias of T
    scope: Scope
    keys: list[tuple[str, exp.Column]]  # (column of T, the outer column it equals)
    differs: tuple[str, exp.Column] | None  # (column of T, the outer column it differs from)
    local: list[exp.Expression]  # the subquery's filters of T alone
    ident: tuple[str, str]


def exists_window(expression, outer: Scope, sub: Scope, scopes, estimator: Estimator, schema, cost_model):
    """Windows for the EXISTS / NOT EXISTS subqueries over one relation the outer block reads on
    their key (this one and its siblings over the same relation), or why not."""
    shape = _exists_shape(outer, sub)
    if isinstance(shape, Skip):
        return shape
    select: exp.Select = outer.expression
    problem = outer_block_problem(select)
    if problem:
        return Skip(problem)
    outer_conjuncts = block_conjuncts(select)
    alias = _outer_relation(shape, outer, outer_conjuncts, schema)
    if alias is None:
        return Skip(
            f"the EXISTS subquery over {shape.ident[1]} is not correlated on the key of a read of {shape.ident[1]} "
            "in the outer block (no input correlation): Spark's semi join stays"
        )
    problem = _type_problem(shape, outer, alias, estimator, schema)
    if problem:
        return Skip(problem)
    members = [shape]
    key = {name.lower() for name, _ in shape.keys}
    for other in outer.subquery_scopes:
        if other is sub or not isinstance(other.expression.parent, exp.Exists):
            continue
        sibling = _exists_shape(outer, other)
        # siblings on the same key only: their windows share one partitioning, one shuffle
        if not isinstance(sibling, _Exists) or sibling.ident != shape.ident:
            continue
        if {name.lower() for name, _ in sibling.keys} != key:
            continue
        if _outer_relation(sibling, outer, outer_conjuncts, schema) == alias:
            if _type_problem(sibling, outer, alias, estimator, schema) is None:
                members.append(sibling)
    return _decide(expression, members, select, outer, alias, scopes, estimator, cost_model)


def _exists_shape(outer: Scope, sub: Scope) -> _Exists | Skip:
    inner, select = sub.expression, outer.expression
    node = inner.parent
    if not isinstance(inner, exp.Select) or not isinstance(node, exp.Exists):
        return Skip("not an EXISTS subquery")
    negated = isinstance(node.parent, exp.Not)
    conjunct = node.parent if negated else node
    where = select.args.get("where")
    if where is None or not any(c is conjunct for c in conjuncts(where.this)):
        return Skip("the EXISTS subquery is not a condition of WHERE on its own (under OR or elsewhere)")
    items = from_items(inner)
    if len(items) != 1 or not isinstance(items[0], exp.Table) or inner.args.get("joins"):
        return Skip("the EXISTS subquery does not read one table or CTE alone")
    if inner.args.get("group") or any(own_aggregate(p) for p in inner.selects):
        return Skip("the EXISTS subquery aggregates: one row whatever matches")
    problem = aggregate_shape_problem(inner, "the EXISTS subquery")
    if problem:
        return Skip(problem)
    alias = items[0].alias_or_name
    ident = identity(sub, alias)
    if ident is None:
        return Skip("the EXISTS subquery reads a derived table, not a table or CTE")
    problem = read_twice_problem(sub, alias)
    if problem:
        return Skip(problem)
    keys, differs, local = [], None, []
    inner_where = inner.args.get("where")
    for predicate in conjuncts(inner_where.this if inner_where else None):
        tables = {c.table for c in predicate.find_all(exp.Column)}
        if tables <= {alias} and predicate.find(exp.Select) is None:
            local.append(predicate)
            continue
        pair = _correlation(predicate, alias, outer)
        if pair is None or (isinstance(predicate, exp.NEQ) and differs is not None):
            return Skip(
                f"the EXISTS subquery's condition {normalized(predicate)} is neither its own filter nor an "
                "equality (or one <>) of a column of its table with one of the outer block's"
            )
        if isinstance(predicate, exp.EQ):
            keys.append(pair)
        else:
            differs = pair
    if not keys:
        return Skip("the EXISTS subquery is not correlated by an equality on a key")
    return _Exists(conjunct, negated, alias, sub, keys, differs, local, ident)


def _correlation(predicate: exp.Expression, alias: str, outer: Scope) -> tuple[str, exp.Column] | None:
    """(column of T, outer column) of `a.c = x.d` or `a.c <> x.d`, x a relation of the outer block."""
    if not isinstance(predicate, (exp.EQ, exp.NEQ)):
        return None
    sides = [predicate.this, predicate.expression]
    if not all(isinstance(s, exp.Column) for s in sides):
        return None
    mine = [s for s in sides if s.table == alias]
    theirs = [s for s in sides if s.table != alias and s.table in outer.selected_sources]
    if len(mine) != 1 or len(theirs) != 1:
        return None
    return mine[0].name, theirs[0]


def _outer_relation(shape: _Exists, outer: Scope, outer_conjuncts, schema) -> str | None:
    """The outer block's read of T whose key every correlation equality names (or is equated to)."""
    for alias in outer.selected_sources:
        if identity(outer, alias) != shape.ident:
            continue
        if all(correlated_to(alias, name, column, outer, outer_conjuncts, schema) for name, column in shape.keys):
            return alias
    return None


def _type_problem(shape: _Exists, outer: Scope, alias: str, estimator: Estimator, schema) -> str | None:
    pairs = [(name, exp.column(name, table=alias)) for name, _ in shape.keys]
    if shape.differs is not None:
        pairs.append(shape.differs)
    for name, column in pairs:
        mine = _type(outer, alias, name, estimator, schema)
        theirs = _type(outer, column.table, column.name, estimator, schema)
        if mine is None or mine != theirs or not mine.startswith(ORDERED_TYPES):
            return (
                f"{shape.ident[1]}.{name} and {normalized(column)} are not of one ordered type "
                f"({mine or 'unknown'}, {theirs or 'unknown'}): MIN and MAX would not say what <> and = say"
            )
    return None


def _type(scope: Scope, alias: str, name: str, estimator: Estimator, schema) -> str | None:
    found = type_of(scope, alias, name, schema)
    if found is not None:
        return found
    source = scope.sources.get(alias)
    if isinstance(source, Scope):  # a CTE: the types of its output, as Spark sizes them
        found = estimator.spark_sizes.output(source.expression)[1].get(name.lower())
    return found.lower() if found else None


def _decide(expression, members: list[_Exists], select, outer: Scope, alias, scopes, estimator, cost_model):
    """Fire where Spark would shuffle the subqueries' rows (too big to broadcast) and the joins'
    shuffles are estimated at MIN_JOINS_TO_WINDOW_RATIO times the window's one shuffle of T or
    more; figures for the record."""
    relation = members[0].ident[1]
    if estimator.source(outer, alias).rows.is_absent:
        return Skip(f"statistics absent for {relation}: Spark's semi join stays")
    threshold = cost_model.broadcast_threshold_bytes
    sizes = estimator.spark_sizes
    shuffled, broadcast = [], []
    for member in members:
        read = _columns_read(member)
        size = sizes.source(member.scope, member.alias, read)
        (shuffled if size > threshold else broadcast).append((member, size, read))
    if not shuffled:
        _, size, _ = broadcast[0]
        return Skip(
            f"Spark broadcasts the EXISTS subquery's rows of {relation} (it sizes them at {human_bytes(size)}): "
            f"{alias} is not shuffled on the key, a window would add that shuffle"
        )
    members = [m for m, _, _ in shuffled]
    columns = columns_of(select, outer, alias, scopes)
    for member in members:
        for name in [n for n, _ in member.keys] + ([member.differs[0]] if member.differs else []):
            if name not in columns:
                columns.append(name)
    filtered = [estimator.build_side(outer, alias).rows]
    filtered += [estimator.build_side(m.scope, m.alias).rows for m in members]
    if any(rows.is_absent for rows in filtered):
        return Skip(f"no estimate of {relation}'s rows after the filters: Spark's semi join stays")
    width = _width(outer, alias, columns, estimator)
    window_bytes = estimator.source(outer, alias).rows.value * width
    joins_bytes = filtered[0].value * width
    for (member, _, read), rows in zip(shuffled, filtered[1:]):
        joins_bytes += rows.value * _width(member.scope, member.alias, read, estimator)
    figures = dict(
        relation=relation,
        outer=alias,
        keys=[n for n, _ in members[0].keys],
        subqueries=len(members),
        window_shuffle_bytes=round(window_bytes),
        joins_shuffle_bytes=round(joins_bytes),
    )
    if joins_bytes < MIN_JOINS_TO_WINDOW_RATIO * window_bytes:
        return Skip(
            f"the semi joins would shuffle {human_bytes(joins_bytes)}, the window {human_bytes(window_bytes)} of "
            f"{relation}: not the {MIN_JOINS_TO_WINDOW_RATIO}x more it takes to gain (calibrated); Spark's joins stay",
            **figures,
        )

    def plan() -> None:
        names = iter(fresh_names(expression, sum(2 if m.differs else 1 for m in members)))
        windows = []
        for member in members:
            test, added = _window_test(member, alias, names)
            windows += added
            member.conjunct.replace(exp.paren(test))
        item = from_item(select, alias)
        item.replace(window_block(item, alias, columns, windows, []))

    kinds = " and ".join(sorted({"NOT EXISTS" if m.negated else "EXISTS" for m in members}))
    reason = (
        f"{kinds} over {relation} per {', '.join(figures['keys'])} -> window over one read of {alias} "
        f"(shuffles {human_bytes(window_bytes)} against {human_bytes(joins_bytes)})"
    )
    return Rewrite(reason, figures, plan)


def _window_test(member: _Exists, alias: str, names) -> tuple[exp.Expression, list[tuple[str, exp.Expression]]]:
    """The condition that replaces the [NOT] EXISTS, and the window columns it reads."""
    keys = [exp.column(name, table=alias) for name, _ in member.keys]
    local = [renamed(p, member.alias, alias) for p in member.local]
    condition = exp.and_(*local) if local else None

    def over(agg: exp.Expression) -> exp.Expression:
        return exp.Window(this=agg, partition_by=[k.copy() for k in keys])

    if member.differs is None:
        name = next(names)
        counted = exp.Literal.number(1)
        if condition is not None:
            counted = exp.Case(ifs=[exp.If(this=condition, true=counted)])
        windows = [(name, over(exp.Count(this=counted)))]
        found: exp.Expression = exp.GT(this=exp.column(name, table=alias), expression=exp.Literal.number(0))
    else:
        lo, hi = next(names), next(names)
        value: exp.Expression = exp.column(member.differs[0], table=alias)
        if condition is not None:
            value = exp.Case(ifs=[exp.If(this=condition, true=value)])
        windows = [(lo, over(exp.Min(this=value.copy()))), (hi, over(exp.Max(this=value.copy())))]
        outer_value = member.differs[1]
        differ = exp.or_(
            exp.NEQ(this=exp.column(lo, table=alias), expression=outer_value.copy()),
            exp.NEQ(this=exp.column(hi, table=alias), expression=outer_value.copy()),
        )
        found = exp.Coalesce(this=differ, expressions=[exp.false()])
    if member.negated:
        test = exp.or_(*[k.copy().is_(exp.null()) for k in keys], exp.not_(found))
    else:
        test = exp.and_(*[exp.not_(k.copy().is_(exp.null())) for k in keys], found)
    return test, windows


def _columns_read(member: _Exists) -> list[str]:
    """The columns of T the subquery reads (its filters, its keys, the column of its <>)."""
    names: list[str] = []
    where = member.scope.expression.args["where"]  # the select list of an EXISTS is not read
    for column in where.find_all(exp.Column):
        if column.table == member.alias and column.name not in names:
            names.append(column.name)
    return names


def _width(scope: Scope, alias: str, columns: list[str], estimator: Estimator) -> float:
    """Bytes per shuffled row of `columns` of alias, by Spark's default sizes of their types."""
    return float(row_size(_type(scope, alias, c, estimator, estimator.schema) for c in columns))
