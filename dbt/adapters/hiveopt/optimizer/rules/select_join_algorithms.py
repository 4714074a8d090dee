"""Pick each join's algorithm from estimated sizes (Hive's auto map-join conversion).

What it does, when it fires and what was measured: docs/rules/select_join_algorithms.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.blocks import join_blocks
from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.cost_model import columns_read
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog, Skip
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.human import human_bytes
from dbt.adapters.hiveopt.optimizer.spark_sizes import UNKNOWN
from dbt.adapters.hiveopt.optimizer.statistics import Estimate
from dbt.adapters.hiveopt.optimizer.syntax import (
    aliases_of,
    conjuncts,
    equi_pair,
    nested_join,
    relation_label,
    source_alias,
)


def _add_hints(select: exp.Select, hints: list[exp.JoinHint]) -> None:
    existing = select.args.get("hint")
    if existing is None:
        select.set("hint", exp.Hint(expressions=hints))
    else:
        existing.set("expressions", [*existing.expressions, *hints])


def select_join_algorithms(
    expression: exp.Expression, estimator: Estimator, config: OptimizerConfig, log: DecisionLog
) -> exp.Expression:
    """Hint each equi-join's build side: BROADCAST when its estimated size (after its filters)
    fits the broadcast threshold, SHUFFLE_HASH when it is much smaller than the other side.
    Details: docs/rules/select_join_algorithms.md.

    >>> from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
    >>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
    >>> schema = {"db": {"f": {"k": "int", "v": "double"}, "d": {"k": "int", "c": "string"}}}
    >>> stats = StatsCatalog.from_dict({"db.f": {"row_count": 10**7, "columns": {"k": {"ndv": 10**4}}},
    ...     "db.d": {"row_count": 100, "columns": {"k": {"ndv": 100}, "c": {"ndv": 100}}}})
    >>> expression = prepare_query("SELECT f.v, d.c FROM db.f JOIN db.d ON f.k = d.k", schema).expression
    >>> log = DecisionLog("select_join_algorithms")
    >>> select_join_algorithms(expression, Estimator(expression, schema, stats), OptimizerConfig(), log).sql()
    'SELECT /*+ BROADCAST(d) */ f.v AS v, d.c AS c FROM db.f AS f JOIN db.d AS d ON f.k = d.k'
    """
    for scope, select, label in join_blocks(expression, log):
        first, joins = select.args["from_"].this, select.args["joins"]
        hints = _choose(scope, first, joins, estimator, config, log, label, select.args.get("where"))
        if hints:
            _add_hints(select, hints)
    return expression


@dataclass(frozen=True)
class _Build:
    """The side of one join to build on: the smaller buildable side, with its estimated sizes."""

    name: str
    bytes: Estimate
    probe_bytes: Estimate
    rows: Estimate
    label: str  # the alias and what it reads, for the reason


def _choose(
    scope: Scope,
    first_node: exp.Expression,
    joins: list[exp.Join],
    estimator: Estimator,
    config: OptimizerConfig,
    log: DecisionLog,
    label: str,
    where: exp.Expression | None = None,
) -> list[exp.JoinHint]:
    """Hints for one chain of joins (the block's, or a nested `(a JOIN b ...)` of it; `where`:
    the block's WHERE, for the block's chain)."""
    hints: list[exp.JoinHint] = []
    # Nested joins (bushy trees) are chains of their own, in the same query block.
    for node in [first_node, *(j.this for j in joins)]:
        nested = nested_join(node)
        if nested is not None:
            hints += _choose(scope, nested, nested.args["joins"], estimator, config, log, label)
    crossed = _crossed_before(first_node, joins, where)
    steps = estimator.join_steps(scope, first_node, joins)
    first = first_node.alias_or_name if nested_join(first_node) is None else None
    spark = _SparkChoice(scope, estimator, first, config)
    for i, join in enumerate(joins):
        build = _build_side(scope, join, i, first, steps[i], estimator, log, label)
        spark_builds = spark.next(join)
        if isinstance(build, Skip):
            build.record_in(log, block=label, join=source_alias(join))
            continue
        if build is None:
            continue
        details = dict(
            block=label,
            join=source_alias(join),
            relation=build.name,
            build_rows=build.rows.value,
            build_bytes=round(build.bytes.value),
            probe_bytes=None if build.probe_bytes.is_absent else round(build.probe_bytes.value),
            precision=build.bytes.precision.name.lower(),
        )
        hint = _algorithm(build, i, config)
        if not isinstance(hint, Skip) and crossed[i] is not None:
            hint = Skip(
                f"a {hint[0]} hint on {build.label} would keep the cross product of {crossed[i]} written before "
                "it, which Spark joins away: its ReorderJoin does not reorder across a join that carries a hint"
            )
        if not isinstance(hint, Skip) and spark_builds is not None:
            hint = _spark_broadcasts(build, spark_builds, spark, scope, hint[0])
        if isinstance(hint, Skip):
            hint.record_in(log, **details)
            continue
        hints.append(exp.JoinHint(this=hint[0], expressions=[exp.to_table(build.name)]))
        log.fired(hint[1], hint=hint[0], **details)
    return hints


def _crossed_before(
    first_node: exp.Expression, joins: list[exp.Join], where: exp.Expression | None
) -> list[str | None]:
    """For each join of a chain: None when the relations written before it are connected by
    conditions among themselves (ON, or WHERE), else the first pair of them no condition links,
    as `a x b`. Spark's ReorderJoin joins relations in the order conditions connect them, but
    treats a join that carries a hint as one relation and reorders only below and above it: a
    hint on a relation written after a cross product of others keeps that cross product (TPC-H
    Q8 as written, `FROM part, supplier, lineitem, ...`: SHUFFLE_HASH(lineitem) left part x
    supplier in Spark's plan, where without it Spark joins part, lineitem, supplier; EXPLAIN).

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT 1 FROM a, b, c, d WHERE c.k = a.k AND c.j = b.j AND d.i = c.i")
    >>> _crossed_before(q.args["from_"].this, q.args["joins"], q.args.get("where"))
    [None, 'a x b', None]
    """
    condition = where.this if isinstance(where, exp.Where) else where
    predicates = [*conjuncts(condition), *(p for join in joins for p in conjuncts(join.args.get("on")))]
    reads = [r for r in (aliases_of(p) for p in predicates) if len(r) > 1]
    items = [_aliases(item) for item in [first_node, *(join.this for join in joins)]]
    crossed: list[str | None] = []
    for i in range(len(joins)):
        written = items[: i + 1]
        everything = set().union(*written)
        # Grow the first relation's component by every condition that reads only what is written.
        component = set(written[0])
        grown = True
        while grown:
            grown = False
            for r in reads:
                if r <= everything and r & component and not r <= component:
                    component |= r
                    grown = True
        outside = [own for own in written if not own <= component]
        crossed.append(None if not outside else f"{sorted(written[0])[0]} x {sorted(outside[0])[0]}")
    return crossed


def _aliases(item: exp.Expression) -> set[str]:
    """The aliases a FROM or JOIN item brings: one, or a nested join's all."""
    nested = nested_join(item)
    if nested is None:
        return {item.alias_or_name}
    return {nested.alias_or_name, *(j.this.alias_or_name for j in nested.args.get("joins") or [])}


def _build_side(
    scope: Scope,
    join: exp.Join,
    i: int,
    first: str | None,
    probe_so_far,
    estimator: Estimator,
    log: DecisionLog,
    label: str,
) -> _Build | Skip | None:
    """The side of join `i` to build on, a Skip saying why there is none, or None when every
    buildable side lacks statistics (each recorded)."""
    if nested_join(join.this) is not None:
        return Skip("a nested join is not one relation a hint can name: Spark decides")
    alias = source_alias(join)
    side, kind = (join.side or "").upper(), (join.kind or "").upper()
    if not any(equi_pair(p) for p in conjuncts(join.args.get("on"))):
        return Skip(f"join to {relation_label(scope, alias)}: no equi-join key, Spark cannot hash-join it")
    candidates = []
    # The right relation can be the build side unless it is the preserved side.
    if side not in ("RIGHT", "FULL"):
        candidates.append((alias, estimator.build_side(scope, alias, join), probe_so_far))
    # The first relation can be built on when the join is inner (or it is null-supplying).
    if i == 0 and first and side in ("", "RIGHT") and kind not in ("SEMI", "ANTI"):
        candidates.append((first, estimator.build_side(scope, first), estimator.build_side(scope, alias, join)))
    if not candidates:
        return Skip(f"{side} OUTER join to {relation_label(scope, alias)}: no side can be built on")
    best = None
    for name, build, probe in candidates:
        build_bytes = build.bytes(columns_read(scope, [name], qualified=True))
        probe_bytes = probe.rows * probe.width() if not probe.rows.is_absent else Estimate.absent()
        if build_bytes.is_absent:
            log.skipped(
                f"statistics absent for {relation_label(scope, name)}: keep Spark's choice", block=label, relation=name
            )
            continue
        if best is None or build_bytes.value < best.bytes.value:
            best = _Build(name, build_bytes, probe_bytes, build.rows, relation_label(scope, name))
    return best


def _spark_broadcasts(build: _Build, spark_builds: str, spark: _SparkChoice, scope: Scope, hint: str) -> Skip:
    """Spark broadcasts a side of this join by itself: the same side (a BROADCAST hint would
    change nothing), or the other one. Building on the other side instead gains little and can
    lose: the side we would name is usually a big table cut by a filter, which a broadcast must
    read whole in a stage of its own before the join starts, where Spark streams it
    (big_order_customers, recent big orders against customers: 0.74x at TPC-H SF 1, 0.66-0.83x at
    SF 0.1). A SHUFFLE_HASH hint there would shuffle both sides where Spark shuffles neither
    (TPC-DS q80, store_sales LEFT JOIN store_returns, which our estimate put at 14.3 MB and Spark
    at under 10 MB: 1.65 s as written, 3.04 s with the hint)."""
    size = f"it sizes it at {human_bytes(spark.sizes[spark_builds])}, under its {human_bytes(spark.threshold)}"
    if hint != "BROADCAST":
        other = relation_label(scope, spark_builds)
        return Skip(f"Spark broadcasts {other} by itself ({size}): a {hint} hint would shuffle both sides instead")
    if spark_builds == build.name:
        return Skip(f"Spark does this already: it broadcasts {build.label} by itself ({size})")
    other = relation_label(scope, spark_builds)
    return Skip(f"Spark broadcasts {other} by itself ({size}): building on {build.label} instead gains little")


class _SparkChoice:
    """Which side Spark itself broadcasts at each join of a chain, from its own sizes (a table's
    size on disk scaled by the columns read; a join result is the product of its sides), as its
    JoinSelection does without hints: the smaller of the sides it may build on and sizes under
    its threshold."""

    def __init__(self, scope: Scope, estimator: Estimator, first: str | None, config: OptimizerConfig):
        self.scope, self.threshold = scope, config.spark_broadcast_threshold_bytes
        self.spark = estimator.spark_sizes
        self.sizes: dict[str, float] = {}
        self.left = self._size(first) if first else UNKNOWN
        self.first, self.index = first, 0

    def _size(self, alias: str) -> float:
        self.sizes[alias] = self.spark.source(self.scope, alias)
        return self.sizes[alias]

    def next(self, join: exp.Join) -> str | None:
        """The relation Spark broadcasts at this join (None: no relation it can name, or none)."""
        alias = source_alias(join)
        right = self._size(alias) if nested_join(join.this) is None else UNKNOWN
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        left_name = self.first if self.index == 0 else None
        fits = [
            (size, name)
            for size, name, buildable in (
                (right, alias, side not in ("RIGHT", "FULL")),
                (self.left, left_name, side in ("", "RIGHT") and kind not in ("SEMI", "ANTI")),
            )
            if buildable and 0 <= size <= self.threshold
        ]
        self.left = self.left if kind in ("SEMI", "ANTI") else self.left * right
        self.index += 1
        return min(fits, key=lambda f: f[0])[1] if fits else None


def _algorithm(build: _Build, i: int, config: OptimizerConfig) -> tuple[str, str] | Skip:
    """(hint, reason) for the build side of join `i`, or why Spark keeps its choice."""
    size, threshold = build.bytes.value, config.broadcast_threshold_bytes
    # After the first join the other side is a join result, which Spark sizes as the product
    # of its inputs' file sizes and does not build on: when this side fits, name it, even if
    # the join result is smaller (cost_model.py says the same to the join order).
    smaller_than_probe = build.probe_bytes.is_absent or size <= build.probe_bytes.value or i > 0
    # No margin under the threshold for estimates that may be off: measured on this Spark
    # (docs/calibration.md), broadcasts of sides estimated up to 8x the threshold still beat Spark
    # alone, and a margin of half the threshold left a 3.9x gain on the table.
    if size <= threshold and smaller_than_probe:
        return "BROADCAST", f"broadcast {build.label}: estimated {human_bytes(size)} <= {human_bytes(threshold)}"
    if (
        config.shuffle_hash
        and not build.probe_bytes.is_absent
        and size * config.shuffle_hash_ratio <= build.probe_bytes.value
        and size <= config.shuffle_hash_partition_bytes * config.shuffle_partitions
    ):
        return "SHUFFLE_HASH", (
            f"shuffle-hash on {build.label}: estimated {human_bytes(size)}, "
            f"{config.shuffle_hash_ratio:g}x smaller than the other side"
        )
    if size <= threshold:
        return Skip(f"{build.label} is small ({human_bytes(size)}) but the other side is smaller: Spark builds on that")
    return Skip(f"build side {build.label} too big to broadcast ({human_bytes(size)}): leave sort-merge to Spark")
