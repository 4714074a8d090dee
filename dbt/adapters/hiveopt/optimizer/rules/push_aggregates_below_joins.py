"""Aggregate one relation of a join before the join (eager aggregation: Yan and Larson's "eager
group-by"; Hive's `hive.transpose.aggr.join`, Calcite's AggregateJoinTransposeRule).

A GROUP BY over an inner join whose aggregates read one relation R only is computed in two
steps: R is grouped first, by every column of R the rest of the block reads (join keys, grouping
keys, filters on other relations), and the block aggregates the partial results::

    SELECT o.custkey, SUM(l.price) FROM lineitem l JOIN orders o ON l.orderkey = o.orderkey GROUP BY o.custkey
 -> SELECT o.custkey, CAST(SUM(l._hiveopt_0) AS DECIMAL(25, 2))
    FROM (SELECT l.orderkey AS orderkey, SUM(l.price) AS _hiveopt_0 FROM lineitem AS l GROUP BY l.orderkey) AS l
    JOIN orders o ON l.orderkey = o.orderkey GROUP BY o.custkey

Exact without any key knowledge: every joined row of the original carries one row of R, and the
rows of R with equal values of those columns meet the same rows of the others and fall into the
same group, so the group's SUM is the sum of their partial sums (MIN of MINs, COUNT the SUM of
counts). The top aggregate stays: nothing is assumed unique. NULLs: a partial SUM of NULLs is
NULL and the outer SUM skips it, as the original skips the rows. Only SUM, MIN, MAX and COUNT
without DISTINCT or FILTER; SUM only of integral and decimal expressions (decimal sums are exact
in any order; a double sum in another order can differ in its last bits), cast back to the type
the original sum has (Spark's SUM adds 10 digits to a decimal, so a sum of sums has 10 more).
R's grouping needs at least one column (a global pre-aggregate returns a row for empty input).

By cost, for the joins Spark shuffles: R is big (more than the broadcast threshold), every
relation it joins is too (a broadcast join is cheap already, and Spark aggregates its output
before any shuffle), grouping R leaves at most half its rows, and the join keeps at least half
of them (a selective join would drop rows the early aggregate works on). Measured (issue 4, TPC-H
SF 1, TPC-DS q1's shape: lineitem JOIN orders grouped by order and customer): the join's stage
is half the query's time; aggregating lineitem by l_orderkey first shrinks every shuffle and the
join to 1.5M rows (1.70x over the window form alone, in the SELECT).

>>> from dbt.adapters.hiveopt.optimizer import OptimizerContext, optimize
>>> from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
>>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
>>> schema = {"db": {"l": {"ok": "bigint", "price": "decimal(15,2)"}, "o": {"ok": "bigint", "cust": "bigint"}}}
>>> stats = StatsCatalog.from_dict({"db.l": {"row_count": 6e6, "columns": {"ok": {"ndv": 1.5e6}}},
...                                 "db.o": {"row_count": 1.5e6, "columns": {"ok": {"ndv": 1.5e6}, "cust": {"ndv": 1e5}}}})
>>> only = OptimizerConfig(rules={"reorder_joins": False, "select_join_algorithms": False})
>>> sql = "SELECT o.cust, SUM(l.price) AS total FROM db.l JOIN db.o ON l.ok = o.ok GROUP BY o.cust"
>>> print(optimize(sql, OptimizerContext(schema=schema, statistics=stats, config=only)).sql)  # doctest: +NORMALIZE_WHITESPACE
SELECT o.cust AS cust, CAST(SUM(l._hiveopt_0) AS DECIMAL(25, 2)) AS total FROM (SELECT l.ok AS ok,
SUM(l.price) AS _hiveopt_0 FROM db.l AS l GROUP BY l.ok) AS l JOIN db.o AS o ON l.ok = o.ok GROUP BY o.cust
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from dbt.adapters.hiveopt.optimizer.blocks import block_label, user_join_hint
from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog
from dbt.adapters.hiveopt.optimizer.estimator import Estimator, aliases_of, conjuncts
from dbt.adapters.hiveopt.optimizer.prepare import deterministic
from dbt.adapters.hiveopt.optimizer.rules.correlation import (
    block_conjuncts,
    drop_conjuncts,
    fresh_names,
    from_items,
    local_to,
    non_inner_join,
    normalized,
)
from dbt.adapters.hiveopt.optimizer.spark_types import expression_type, sum_type

# Grouping R must leave at most this share of its rows, and the join must keep at least this
# share of them, for the early aggregate to pay for itself.
MAX_GROUP_SHARE = 0.5
MIN_JOINED_SHARE = 0.5
MAX_REWRITES = 16
PUSHABLE = (exp.Sum, exp.Min, exp.Max, exp.Count)


class _Candidate:
    """One relation of the block whose aggregates could be computed before the join."""

    def __init__(self, alias: str, keys: List[str], local: List[exp.Expression]):
        self.alias, self.keys, self.local = alias, keys, local
        self.rows = self.groups = self.joined = 0.0


def push_aggregates_below_joins(expression: exp.Expression, schema, statistics, config: OptimizerConfig,
                                log: DecisionLog) -> exp.Expression:
    done: Set[int] = set()
    for _ in range(MAX_REWRITES):
        estimator = Estimator(expression, schema, statistics)
        for scope in traverse_scope(expression):
            select = scope.expression
            if id(select) in done or not isinstance(select, exp.Select) or not select.args.get("group") or not select.args.get("joins"):
                continue
            done.add(id(select))
            if _push_once(scope, select, expression, estimator, config, log):
                break  # the tree changed: scopes and estimates are rebuilt
        else:
            break
    return expression


def _push_once(scope: Scope, select: exp.Select, root: exp.Expression, estimator: Estimator,
               config: OptimizerConfig, log: DecisionLog) -> bool:
    label = block_label(scope)
    problem = _shape_problem(select)
    if problem:
        log.skipped(problem, block=label)
        return False
    aggregates = [a for a in select.find_all(exp.AggFunc)]
    candidates, why_not = [], []
    for item in from_items(select):
        alias = item.alias_or_name
        if alias not in scope.selected_sources:
            continue
        reason = _candidate_problem(alias, aggregates, scope, estimator)
        if reason:
            why_not.append(f"{alias}: {reason}")
            continue
        local = [c for c in block_conjuncts(select) if local_to(c, alias) and deterministic(c)]
        moved = {id(c) for c in local}
        keys = sorted({c.name for c in _block_columns(select, alias) if not _under(c, aggregates, moved)})
        if not keys:
            why_not.append(f"{alias}: the rest of the block reads none of its columns (a global pre-aggregate would add a row for empty input)")
            continue
        candidate = _Candidate(alias, keys, local)
        reason = _cost_problem(candidate, scope, select, estimator, config)
        if reason:
            why_not.append(f"{alias}: {reason}")
            continue
        candidates.append(candidate)
    if not candidates:
        log.skipped("no relation to aggregate before the join: " + "; ".join(why_not), block=label)
        return False
    best = max(candidates, key=lambda c: c.rows - c.groups)
    _rewrite(select, root, best, aggregates, scope, estimator)
    log.fired(f"{_describe(select, best.alias)} aggregated by {', '.join(best.keys)} before the join "
              f"({best.rows:,.0f} rows -> {best.groups:,.0f} groups; the join keeps {best.joined:,.0f} rows)",
              block=label, relation=best.alias, keys=best.keys, rows=round(best.rows), groups=round(best.groups),
              joined_rows=round(best.joined))
    return True


def _shape_problem(select: exp.Select) -> Optional[str]:
    group = select.args["group"]
    if any(group.args.get(arg) for arg in ("grouping_sets", "cube", "rollup", "totals", "all")) or any(
            isinstance(e, (exp.GroupingSets, exp.Cube, exp.Rollup)) for e in group.expressions):
        return "GROUPING SETS, CUBE or ROLLUP"
    joined = non_inner_join(select)
    if joined:
        return f"a {joined} (only inner joins keep one row per joined pair)"
    if user_join_hint(select) or select.args.get("hint"):
        return "the block has a hint: it stays as written"
    if select.args.get("qualify") or select.find(exp.Window):
        return "a window function in the block"
    if any(s is not select for s in select.find_all(exp.Select)):
        return "a subquery in the block"
    if not deterministic(select):
        return "a non-deterministic expression in the block (the early aggregate would change how often it runs)"
    if select.args.get("laterals"):
        return "a LATERAL VIEW in the block"
    if any(not isinstance(item, (exp.Table, exp.Subquery)) or (isinstance(item, exp.Subquery) and not item.alias)
           or item.args.get("joins") for item in from_items(select)):
        return "a nested join, LATERAL or table function in FROM"
    for aggregate in select.find_all(exp.AggFunc):
        if not isinstance(aggregate, PUSHABLE):
            return f"{aggregate.sql_name()} cannot be split into partial aggregates"
        if isinstance(aggregate.this, exp.Distinct) or isinstance(aggregate.parent, exp.Filter):
            return "a DISTINCT or FILTER aggregate"
        if not deterministic(aggregate):
            return "a non-deterministic aggregate argument"
    if not any(True for _ in select.find_all(exp.AggFunc)):
        return "no aggregate function (a plain GROUP BY)"
    return None


def _candidate_problem(alias: str, aggregates: List[exp.AggFunc], scope: Scope, estimator: Estimator) -> Optional[str]:
    for aggregate in aggregates:
        if aliases_of(aggregate) - {alias}:
            return f"{normalized(aggregate)} reads another relation"
        if isinstance(aggregate, exp.Sum) and sum_type(_argument_type(aggregate, alias, scope, estimator)) is None:
            return f"{normalized(aggregate)}: a SUM of a double or of an expression whose type is not known (only integral and decimal sums are exact in any order)"
    return None


def _argument_type(aggregate: exp.AggFunc, alias: str, scope: Scope, estimator: Estimator) -> Optional[str]:
    source = estimator.source(scope, alias)
    return expression_type(aggregate.this, lambda column: source.column(column.name).data_type)


def _block_columns(select: exp.Select, alias: str) -> List[exp.Column]:
    return [c for c in select.find_all(exp.Column) if c.table == alias]


def _under(column: exp.Column, aggregates: List[exp.AggFunc], moved: Set[int]) -> bool:
    """Whether the column is read inside an aggregate or a conjunct that moves into R's block."""
    ids = {id(a) for a in aggregates} | moved
    node = column.parent
    while node is not None:
        if id(node) in ids:
            return True
        node = node.parent
    return False


def _cost_problem(candidate: _Candidate, scope: Scope, select: exp.Select, estimator: Estimator,
                  config: OptimizerConfig) -> Optional[str]:
    alias = candidate.alias
    everything = block_conjuncts(select)
    relation = estimator.build_side(scope, alias)
    read = {f"{alias}.{c.name}" for c in _block_columns(select, alias)}
    rows = relation.rows
    if rows.is_absent:
        return "its row count is unknown"
    keys = [exp.column(k, table=alias) for k in candidate.keys]
    groups = estimator.group_rows(relation, keys)
    joined = estimator.join_block(scope).rows
    if joined.is_absent:
        return "the join's rows are unknown"
    candidate.rows, candidate.groups, candidate.joined = rows.value, groups.value, joined.value
    threshold = config.broadcast_threshold_bytes
    size = relation.bytes(read)
    if size.is_absent or size.value <= threshold:
        return f"small ({_mb(size)} against the broadcast threshold {threshold / 1e6:.0f} MB): Spark's plan is cheap already"
    partners = sorted({a for c in everything if alias in aliases_of(c) for a in aliases_of(c)} - {alias})
    for partner in partners:
        other = estimator.build_side(scope, partner).bytes({f"{partner}.{c.name}" for c in _block_columns(select, partner)})
        if other.is_absent or other.value <= threshold:
            return f"it joins {partner}, which Spark can broadcast ({_mb(other)}): the join needs no shuffle of {alias}"
    if groups.value > MAX_GROUP_SHARE * rows.value:
        return f"grouping by {', '.join(candidate.keys)} leaves {groups.value:,.0f} of {rows.value:,.0f} rows (more than {MAX_GROUP_SHARE:.0%})"
    if joined.value < MIN_JOINED_SHARE * rows.value:
        return f"the join keeps {joined.value:,.0f} of its {rows.value:,.0f} rows (under {MIN_JOINED_SHARE:.0%}): aggregating first works on rows the join drops"
    return None


def _mb(size) -> str:
    return "unknown size" if size.is_absent else f"{size.value / 1e6:,.1f} MB"


def _describe(select: exp.Select, alias: str) -> str:
    for item in from_items(select):
        if item.alias_or_name == alias and isinstance(item, exp.Table):
            return ".".join(p for p in (item.db, item.name) if p)
    return alias


def _rewrite(select: exp.Select, root: exp.Expression, candidate: _Candidate, aggregates: List[exp.AggFunc],
             scope: Scope, estimator: Estimator) -> None:
    alias = candidate.alias
    partials: Dict[str, Tuple[str, exp.AggFunc]] = {}
    names = iter(fresh_names(root, len(aggregates)))
    for aggregate in aggregates:
        key = normalized(aggregate)
        if key not in partials:
            partials[key] = (next(names), aggregate.copy())
    item = next(i for i in from_items(select) if i.alias_or_name == alias)
    keys = [exp.column(k, table=alias) for k in candidate.keys]
    inner = exp.select(*[exp.alias_(k.copy(), k.name) for k in keys],
                       *[exp.alias_(partial, name) for name, partial in partials.values()])
    inner = inner.from_(item.copy()).group_by(*[k.copy() for k in keys])
    if candidate.local:
        inner = inner.where(exp.and_(*[c.copy() for c in candidate.local]))
    for aggregate in aggregates:
        name, partial = partials[normalized(aggregate)]
        aggregate.replace(_outer(partial, exp.column(name, table=alias), alias, scope, estimator))
    drop_conjuncts(select, candidate.local)
    item.replace(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias))))


def _outer(partial: exp.AggFunc, column: exp.Column, alias: str, scope: Scope, estimator: Estimator) -> exp.Expression:
    """The aggregate of the partial results that equals the original aggregate, in its type."""
    if isinstance(partial, exp.Count):
        # COUNT is never NULL; a group always has a partial count, the COALESCE keeps the column non-nullable.
        return exp.func("COALESCE", exp.Sum(this=column), exp.Literal.number(0))
    if isinstance(partial, exp.Sum):
        original = sum_type(_argument_type(partial, alias, scope, estimator))
        outer = exp.Sum(this=column)
        return outer if sum_type(original) == original else exp.cast(outer, original)
    return type(partial)(this=column)
