"""Rewrite a join around its skewed keys (Hive's compile-time skew join).

What it does, when it fires and what was measured: docs/rules/rewrite_skew_joins.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.blocks import join_blocks
from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.cost_model import skew_join_speedup
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog, Skip
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.human import human_bytes
from dbt.adapters.hiveopt.optimizer.literals import literal_for, typed_value
from dbt.adapters.hiveopt.optimizer.syntax import (
    NOT_DETERMINISTIC,
    column_label,
    conjuncts,
    deterministic,
    equi_pair,
    nested_join,
    relation_label,
    source_alias,
)

# Fire only when the cost model expects the rewrite at least this much faster: it reads both
# inputs twice, and estimates are estimates.
SKEW_MIN_SPEEDUP = 1.1
# The derived table's name (made unique in the block if taken).
DERIVED_ALIAS = "skew_join"


def rewrite_skew_joins(
    expression: exp.Expression, estimator: Estimator, config: OptimizerConfig, log: DecisionLog
) -> exp.Expression:
    """Split each block's first join whose key has hot values (heavy hitters, or `skewed_keys`)
    into a UNION ALL of the hot keys (the other side broadcast) and the rest, when the cost model
    expects it faster. Details: docs/rules/rewrite_skew_joins.md.

    >>> from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
    >>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
    >>> schema = {"db": {"f": {"k": "int", "v": "double"}, "d": {"k": "int", "name": "string"}}}
    >>> stats = StatsCatalog.from_dict({
    ...     "db.f": {"row_count": 10**8, "columns": {"k": {"ndv": 10**6, "heavy_hitters": [[42, 9 * 10**7]]}}},
    ...     "db.d": {"row_count": 10**7, "columns": {"k": {"ndv": 10**7}, "name": {"ndv": 10**7}}}})
    >>> expression = prepare_query("SELECT d.name, f.v FROM db.f JOIN db.d ON f.k = d.k", schema).expression
    >>> log = DecisionLog("rewrite_skew_joins")
    >>> estimator, config = Estimator(expression, schema, stats), OptimizerConfig(task_slots=2)
    >>> rewritten = rewrite_skew_joins(expression, estimator, config, log)
    >>> print(rewritten.sql())  # doctest: +NORMALIZE_WHITESPACE
    SELECT skew_join.d_name AS name, skew_join.f_v AS v FROM (SELECT /*+ BROADCAST(d) */ d.name AS d_name,
    f.v AS f_v FROM db.f AS f JOIN db.d AS d ON f.k = d.k WHERE f.k IN (42) AND d.k IN (42) UNION ALL
    SELECT d.name AS d_name, f.v AS f_v FROM db.f AS f JOIN db.d AS d ON f.k = d.k WHERE NOT f.k IN (42))
    AS skew_join
    """
    for scope, select, label in list(join_blocks(expression, log)):
        _rewrite_block(scope, select, label, estimator, config, log)
    return expression


def weighs_hot_key_shares(expression: exp.Expression, estimator: Estimator, config: OptimizerConfig) -> bool:
    """Whether the split weighs a hot key's share against config.task_slots on `expression` (which
    it rewrites: give it a copy). The adapter asks a server for its task slots only then."""
    weighed: list[int] = []
    log = DecisionLog("rewrite_skew_joins")  # the probe's, not the model's record
    for scope, select, label in list(join_blocks(expression, log)):
        _rewrite_block(scope, select, label, estimator, config, log, weighed.append)
    return bool(weighed)


def _hot_keys(
    scope: Scope, alias: str, column: exp.Column, estimator: Estimator, config: OptimizerConfig, log: DecisionLog
) -> tuple[list[tuple[Any, float | None]], str]:
    """[(value, share of the side's rows or None)] and where they came from. Every value is one of
    the key column's type (literals.typed_value): NULL and values that do not convert are dropped
    with a warning, so neither branch's IN-list can hold a NULL (`NOT k IN (NULL, ..)` drops
    every row) or a cast that fails."""
    source = scope.sources.get(alias)
    data_type = estimator.source(scope, alias).column(column.name).data_type
    if isinstance(source, exp.Table):
        table = ".".join(p for p in (source.db, source.name) if p).lower()
        configured = {str(t).lower(): cols for t, cols in (config.skewed_keys or {}).items()}
        values = {str(c).lower(): v for c, v in (configured.get(table) or {}).items()}.get(column.name.lower())
        if values:
            hot = _typed_keys([(v, None) for v in values], data_type, f"skewed_keys of {table}.{column.name}", log)
            if hot:
                return hot, f"skewed_keys config of {table}"
    estimate = estimator.source(scope, alias).column(column.name)
    if estimate.heavy_hitters is None:
        return [], "no heavy hitters gathered"
    hot = [(v, share) for v, share in estimate.heavy_hitters if share >= config.skew_key_min_share]
    table = source.sql(DIALECT) if isinstance(source, exp.Table) else alias
    hot = _typed_keys(hot, data_type, f"heavy hitters of {table}.{column.name}", log)
    return sorted(hot, key=lambda item: -(item[1] or 0.0)), "heavy hitters"


def _typed_keys(
    keys: list[tuple[Any, float | None]], data_type: str | None, origin: str, log: DecisionLog
) -> list[tuple[Any, float | None]]:
    """The keys whose values convert to the column's type, each once; a warning per dropped value."""
    kept: dict[Any, tuple[Any, float | None]] = {}
    for value, share in keys:
        typed, problem = typed_value(value, data_type)
        if problem is not None:
            log.warn(f"{origin}: {problem}; ignored")
            continue
        kept.setdefault((type(typed), typed), (typed, share))
    return list(kept.values())


def _rewrite_block(
    scope: Scope,
    select: exp.Select,
    label: str,
    estimator: Estimator,
    config: OptimizerConfig,
    log: DecisionLog,
    weigh: Callable[[int], None] = lambda slots: None,
) -> None:
    first, joins = select.args["from_"].this, select.args["joins"]
    join = joins[0]
    if nested_join(first) is not None or nested_join(join.this) is not None:
        log.skipped("the first join is a nested join: left as it is", block=label)
        return
    side, kind = (join.side or "").upper(), (join.kind or "").upper()
    if side not in ("", "LEFT") or kind in ("SEMI", "ANTI", "CROSS"):
        log.skipped(f"{side or kind} join: only inner joins and LEFT joins are split", block=label)
        return
    left, right = first.alias_or_name, source_alias(join)
    if not all(isinstance(scope.sources.get(alias), exp.Table) for alias in (left, right)):
        # Each branch reads both inputs: a derived table or CTE would be computed twice, and one
        # with rand() in it would not even give the same rows twice.
        log.skipped("the first join reads a derived table or CTE: only joins of tables are split", block=label)
        return
    volatile = [alias for alias in (left, right) if not deterministic(scope.sources[alias])]
    if volatile:
        # Spark parses a TABLESAMPLE, and expands a view, at each reference: each branch would
        # draw its own rows of it.
        log.skipped(
            f"{relation_label(scope, volatile[0])} draws other rows at each reading ({NOT_DETERMINISTIC}): each "
            "branch of a split would read other rows",
            block=label,
        )
        return
    pairs = [p for p in (equi_pair(c) for c in conjuncts(join.args.get("on"))) if p]
    pairs = [(a, b) if a.table == left else (b, a) for a, b in pairs if {a.table, b.table} == {left, right}]
    if not pairs:
        log.skipped("no equi-join key: nothing to split on", block=label)
        return
    build = {alias: estimator.build_side(scope, alias, join if alias == right else None) for alias in (left, right)}
    # The preserved side of a LEFT join keeps its unmatched rows in either branch: only it may be split.
    sides = [(left, right, 0)] + ([(right, left, 1)] if side == "" else [])
    reasons = []
    for skewed, other, position in sides:
        for pair in pairs:
            key, other_key = pair[position], pair[1 - position]
            plan = _decide(scope, skewed, other, key, other_key, build, estimator, config, log, weigh)
            if isinstance(plan, Skip):
                reasons.append(f"{column_label(scope, skewed, key.name)}: {plan.reason}")
                continue
            literals = [literal_for(value, plan.data_type) for value, _ in plan.hot]
            if not literals or any(literal is None or isinstance(literal, exp.Null) for literal in literals):
                reasons.append(
                    f"{column_label(scope, skewed, key.name)}: no literal of type {plan.data_type} for its hot keys"
                )
                continue
            if not _rewrite(scope, select, skewed, other, key, other_key, literals, side):
                reasons.append(
                    f"{column_label(scope, skewed, key.name)}: the block cannot be rewritten around it "
                    "(a correlated subquery or a star reads the join)"
                )
                continue
            speedup = plan.details["speedup"]
            estimate = f"estimated {speedup:.2f}x" if speedup else "declared"
            log.fired(
                f"split {relation_label(scope, skewed)} JOIN {relation_label(scope, other)} on {len(plan.hot)} hot "
                f"key(s) of {skewed}.{key.name} "
                f"({plan.origin}): {estimate}",
                block=label,
                skewed=f"{skewed}.{key.name}",
                hot_keys=[v for v, _ in plan.hot],
                **plan.details,
            )
            return
    log.skipped("; ".join(reasons), block=label)


@dataclass(frozen=True)
class _SkewPlan:
    """A split to make: the hot keys (value, share or None when declared), where they came from,
    the key's type and the figures for the record."""

    hot: list[tuple[Any, float | None]]
    origin: str
    data_type: str | None
    details: dict[str, Any]


def _decide(
    scope: Scope,
    skewed: str,
    other: str,
    key: exp.Column,
    other_key: exp.Column,
    build: dict[str, Any],
    estimator: Estimator,
    config: OptimizerConfig,
    log: DecisionLog,
    weigh: Callable[[int], None],
) -> _SkewPlan | Skip:
    """The split of `skewed` JOIN `other` on its hot keys, or why not; `weigh` is told the task
    slots when a hot key's share is weighed against them."""
    hot, origin = _hot_keys(scope, skewed, key, estimator, config, log)
    if not hot:
        return Skip(f"no hot key ({origin})")
    dtype = estimator.source(scope, skewed).column(key.name).data_type
    sizes = _too_big_to_broadcast(scope, build, (skewed, other), config, estimator)
    if isinstance(sizes, Skip):
        return sizes
    shares = [share for _, share in hot]
    declared = any(share is None for share in shares)
    if declared:
        # Keys the model declares skewed: their shares come from the heavy hitters when gathered.
        known = _shares(estimator.source(scope, skewed).column(key.name).heavy_hitters, dtype)
        shares = [known.get((type(v), v)) for v, _ in hot]
        declared = any(s is None for s in shares)
    other_hot_rows = _other_hot_rows(scope, other, other_key, hot, dtype, estimator)
    if isinstance(other_hot_rows, Skip):
        return other_hot_rows
    width = sizes[other] / max(build[other].rows.value, 1.0)
    if other_hot_rows * width > config.broadcast_threshold_bytes:
        return Skip(f"{other}'s rows for the hot keys ({other_hot_rows:.0f}) are too many to broadcast")
    if declared:
        # The model's own declaration (Hive's SKEWED BY) stands in for the unknown shares.
        details = dict(hot_share=None, task_slots=config.task_slots, speedup=None, other_hot_rows=round(other_hot_rows))
        return _SkewPlan(hot, origin + ", shares unknown: trusted", dtype, details)
    weigh(config.task_slots)
    speedup = skew_join_speedup(max(shares), config.task_slots)
    if speedup < SKEW_MIN_SPEEDUP:
        return Skip(
            f"the largest hot key holds {max(shares):.0%} of the rows: with {config.task_slots} task slots the "
            f"rewrite is estimated {speedup:.2f}x (needs {SKEW_MIN_SPEEDUP}x)"
        )
    details = dict(
        hot_share=round(sum(shares), 4),
        largest_key_share=round(max(shares), 4),
        task_slots=config.task_slots,
        speedup=round(speedup, 3),
        other_hot_rows=round(other_hot_rows),
    )
    return _SkewPlan(hot, origin, dtype, details)


def _too_big_to_broadcast(
    scope: Scope, build: dict[str, Any], aliases, config: OptimizerConfig, estimator: Estimator
) -> dict[str, float] | Skip:
    """Each side's estimated bytes, or why the join is not one to split: a side that fits a
    broadcast, by our estimate or by Spark's own size of it, has no skew (a broadcast join has no
    skewed task: a 90% hot key over a dimension Spark broadcasts by itself split 0.91-1.02x on
    2-8M rows, docs/calibration.md)."""
    sizes = {}
    for alias in aliases:
        spark_size = estimator.spark_sizes.source(scope, alias)
        if 0 <= spark_size <= config.spark_broadcast_threshold_bytes:
            return Skip(
                f"Spark broadcasts {relation_label(scope, alias)} by itself (it sizes it at "
                f"{human_bytes(spark_size)}): a broadcast join has no skew"
            )
    for alias in aliases:
        relation = build[alias]
        size = relation.bytes([c for c in relation.columns if c.startswith(f"{alias}.")])
        if size.is_absent:
            return Skip(f"statistics absent for {relation_label(scope, alias)}")
        sizes[alias] = size.value
        if size.value <= config.broadcast_threshold_bytes:
            return Skip(
                f"{relation_label(scope, alias)} fits a broadcast ({human_bytes(size.value)}): "
                "a broadcast join has no skew"
            )
    return sizes


def _other_hot_rows(scope: Scope, other: str, other_key: exp.Column, hot, dtype, estimator: Estimator) -> float | Skip:
    """The other side's rows for the hot keys (its heavy hitters' shares, else 1/NDV a key)."""
    other_column = estimator.source(scope, other).column(other_key.name)
    other_rows = estimator.source(scope, other).rows
    if other_rows.is_absent:
        return Skip(f"statistics absent for {relation_label(scope, other)}")
    other_shares = _shares(other_column.heavy_hitters, dtype)
    per_key = 1.0 / other_column.ndv.value if not other_column.ndv.is_absent and other_column.ndv.value else None
    if per_key is None and not other_shares:
        return Skip(f"no NDV for {other}.{other_key.name}: its rows for the hot keys cannot be sized")
    return sum(other_rows.value * other_shares.get((type(v), v), per_key or 0.0) for v, _ in hot)


def _shares(heavy_hitters: list[tuple[Any, float]] | None, data_type: str | None) -> dict[Any, float]:
    """Heavy hitters' shares by their value in the key's type (values that do not convert: left out)."""
    shares: dict[Any, float] = {}
    for value, share in heavy_hitters or []:
        typed, problem = typed_value(value, data_type)
        if problem is None:
            shares.setdefault((type(typed), typed), share)
    return shares


def _rewrite(
    scope: Scope,
    select: exp.Select,
    skewed: str,
    other: str,
    key: exp.Column,
    other_key: exp.Column,
    literals: list[exp.Expression],
    side: str,
) -> bool:
    """Replace the block's first join by a derived UNION ALL of its hot-key branch (broadcast)
    and the rest; False when the block reads the pair in a way the rewrite would lose."""
    pair = {skewed, other}
    if _reads_pair_elsewhere(scope, select, pair):
        return False
    columns = [c for c in scope.columns if c.table in pair]
    join = select.args["joins"][0]
    on_columns = {id(c) for c in join.find_all(exp.Column)}
    taken = {s.alias_or_name for s in scope.sources.values() if hasattr(s, "alias_or_name")} | set(scope.sources)
    name = DERIVED_ALIAS
    while name in taken:
        name += "_"
    outputs = _outputs([c for c in columns if id(c) not in on_columns], key)
    split = _Split(select.args["from_"].this, join, outputs, literals, key, other_key, other, side)
    union = exp.union(split.branch(hot=True), split.branch(hot=False), distinct=False)
    derived = exp.Subquery(this=union, alias=exp.TableAlias(this=exp.to_identifier(name)))
    for column in columns:
        if id(column) not in on_columns:
            column.replace(exp.column(outputs[(column.table, column.name)], table=name))
    select.set("from_", exp.From(this=derived))
    select.set("joins", select.args["joins"][1:] or None)
    return True


def _reads_pair_elsewhere(scope: Scope, select: exp.Select, pair: set[str]) -> bool:
    """A subquery of the block reading the two relations, or a star, would lose them."""
    for child in scope.subquery_scopes + scope.udtf_scopes:
        if any(c.table in pair for c in child.external_columns):
            return True
    return any(isinstance(node, exp.Star) for node in select.expressions) or any(
        isinstance(c.this, exp.Star) for c in scope.columns if c.table in pair
    )


def _outputs(columns: list[exp.Column], key: exp.Column) -> dict[tuple[str, str], str]:
    """One output column per column of the pair the rest of the block reads."""
    outputs: dict[tuple[str, str], str] = {}
    for column in columns:
        ident = (column.table, column.name)
        if ident not in outputs:
            base = f"{column.table}_{column.name}"
            alias, n = base, 1
            while alias in outputs.values():
                n += 1
                alias = f"{base}_{n}"
            outputs[ident] = alias
    if not outputs:  # e.g. SELECT COUNT(*): carry the key, so each branch has a column
        outputs[(key.table, key.name)] = f"{key.table}_{key.name}"
    return outputs


@dataclass(frozen=True)
class _Split:
    """The two branches of a split join: the hot keys (the other side broadcast) and the rest."""

    first: exp.Expression
    join: exp.Join
    outputs: dict[tuple[str, str], str]
    literals: list[exp.Expression]
    key: exp.Column
    other_key: exp.Column
    other: str
    side: str

    def in_hot(self, col: exp.Column) -> exp.In:
        return exp.In(this=exp.column(col.name, table=col.table), expressions=[v.copy() for v in self.literals])

    def branch(self, hot: bool) -> exp.Select:
        body = exp.select(*[exp.alias_(exp.column(c, table=t), a) for (t, c), a in self.outputs.items()])
        body.set("from_", exp.From(this=self.first.copy()))
        branch_join = self.join.copy()
        body.set("joins", [branch_join])
        if hot:
            body.set(
                "hint", exp.Hint(expressions=[exp.JoinHint(this="BROADCAST", expressions=[exp.to_table(self.other)])])
            )
            if self.side == "LEFT":
                # The null-supplying side's filter belongs in ON; the preserved side's in WHERE.
                branch_join.set("on", exp.and_(*conjuncts(branch_join.args["on"]), self.in_hot(self.other_key)))
                body.set("where", exp.Where(this=self.in_hot(self.key)))
            else:
                body.set("where", exp.Where(this=exp.and_(self.in_hot(self.key), self.in_hot(self.other_key))))
            return body
        rest = exp.Not(this=self.in_hot(self.key))
        if self.side == "LEFT":  # unmatched NULL keys of the preserved side are kept by the join
            rest = exp.or_(exp.Is(this=exp.column(self.key.name, table=self.key.table), expression=exp.Null()), rest)
        body.set("where", exp.Where(this=rest))
        return body
