"""The cost of a join tree in bytes moved, as Spark would run it.

Data movement, not rows alone (Hive's 2026 finding, apache/hive PR 6596: row-count costs pick
shuffle-heavy orders): a join whose smaller buildable input fits under the broadcast threshold
costs that input's bytes times the parallelism (every task receives a copy); otherwise it is a
sort-merge join that shuffles both inputs, except an input already partitioned on the join keys
(the output of a sort-merge join on the same keys, or a table bucketed on them). Every join also
costs the bytes it produces.

Only what Spark will really broadcast counts as a broadcast: one relation (a hint can name it),
or an intermediate result Spark itself sizes under the threshold. Spark sizes a join of tables
statically as the product of their file sizes, so a small join result of real tables is
shuffled, not broadcast (AQE converts it only after both sides have been shuffled).

>>> model = CostModel(broadcast_threshold_bytes=100, parallelism=4)
>>> model.join_cost(JoinInput(1000, None), JoinInput(50, None), keys=[("a.k", "b.k")], output_bytes=400)
(300.0, 'broadcast', None)
>>> cost, _, _ = model.join_cost(JoinInput(1000, None), JoinInput(500, None), keys=[("a.k", "b.k")], output_bytes=800)
>>> cost - 2 * EXCHANGE_FIXED_BYTES
1700.0
>>> unbuildable = JoinInput(50, None, buildable=False)
>>> model.join_cost(unbuildable, JoinInput(1000, None), keys=[("a.k", "b.k")], output_bytes=500)[1]
'sort-merge'
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.relation_estimates import RelationEstimate
from dbt.adapters.hiveopt.optimizer.statistics import Estimate
from dbt.adapters.hiveopt.optimizer.syntax import conjuncts, equi_pair, from_items, nested_join

# Spark local mode on this machine runs 2 tasks at once; a cluster many more. A broadcast is sent
# to every executor: its bytes count this many times.
DEFAULT_PARALLELISM = 8
# What producing one byte of join output costs relative to shuffling one byte (which is
# serialized, written, fetched and sorted). At 1.0 the join of TPC-H Q2's subquery moved a 32 MB
# table through a shuffle to save 800k streamed rows of broadcast joins, and ran slower (SF 1).
OUTPUT_BYTE_COST = 0.25
# The fixed cost of one exchange (a shuffle stage: its map and reduce tasks, scheduling, files),
# as bytes moved; what makes shuffling two small inputs dearer than broadcasting one of them.
EXCHANGE_FIXED_BYTES = 8 * 1024 * 1024
# Reading one byte of a column from Parquet, relative to shuffling one byte (write, sort, fetch):
# columnar, compressed, read in parallel; the correlation rules weigh a second scan with it.
SCAN_BYTE_COST = 0.25
# Rewriting an aggregate joined back to its input into a window shuffles and sorts the input once
# (per byte about as dear as a shuffle); computing the input a second time must cost at least
# this many times more before the correlation rule trades one for the other.
WINDOW_BYTE_COST = 1.0
# The bytes per row of each column a window adds (the aggregate's value).
WINDOW_COLUMN_BYTES = 8
MIN_RECOMPUTE_TO_WINDOW_RATIO = 1.0
# What Spark redoes when it computes an input a second time with exchange reuse on (the default):
# the identical shuffle exchanges of both reads run once (ReusedExchange), so the second read
# repeats only the work above its last exchanges. A sort-merge join there re-reads its inputs'
# shuffle files and sorts them again (per byte: a shuffle fetch and a sort, no write).
RESORT_BYTE_COST = 0.5
# An aggregate hashing its input, per byte. Above a reused exchange this is the final aggregate
# merging the partial results; over a sort-merge join on its grouping keys (no exchange between
# them) it is the whole aggregate of the join's output. Measured on TPC-H SF 1 (2 cores): with
# the final aggregate behind the exchange the window form ran 0.98x the original; with the
# aggregate on a sort-merge join grouped by the join key, 1.45x (5.06 s vs 7.33 s).
AGGREGATE_BYTE_COST = 0.25


@dataclass(frozen=True)
class JoinInput:
    bytes: float
    # Join keys (as equivalence-class names) this input is already hash-partitioned on, if any.
    partitioned_on: frozenset[str] | None
    # Whether Spark can build a broadcast on this input: a relation a hint names, or a result
    # Spark's own static estimate puts under the threshold.
    buildable: bool = True


@dataclass
class CostModel:
    """The one source of costs (bytes moved, as Spark would run the plan). The pipeline builds
    one per query from the configuration and hands it to the rules, which ask it; rows and widths
    come from the estimator."""

    broadcast_threshold_bytes: float
    parallelism: int = DEFAULT_PARALLELISM

    def recompute(self, estimator: Estimator, scope: Scope, alias: str) -> Stage:
        """What reading FROM item `alias` of `scope` once more costs (see recompute_after_reuse)."""
        return recompute_after_reuse(estimator, scope, alias, self.broadcast_threshold_bytes)

    def compute(self, estimator: Estimator, scope: Scope) -> Estimate:
        """What computing this block once more costs (see compute_cost)."""
        return compute_cost(estimator, scope, self.broadcast_threshold_bytes)

    @staticmethod
    def window(rows: Estimate, width_bytes: float, added_columns: int) -> Estimate:
        """What a window over `rows` rows of `width_bytes` costs: the rows, with the columns the
        window adds, shuffled and sorted by its partition key."""
        return rows * (width_bytes + added_columns * WINDOW_COLUMN_BYTES) * WINDOW_BYTE_COST

    @staticmethod
    def window_pays(recompute: Estimate, window: Estimate) -> bool:
        """Whether computing the input again costs enough more than the window to trade them."""
        return recompute.value >= window.value * MIN_RECOMPUTE_TO_WINDOW_RATIO

    def broadcast_side(self, left: JoinInput, right: JoinInput) -> int | None:
        """Which side an equi-join builds as a broadcast (0 left, 1 right): the smaller of those
        buildable under the threshold; None when neither is.

        >>> CostModel(broadcast_threshold_bytes=100).broadcast_side(JoinInput(1000, None), JoinInput(50, None))
        1
        """
        builds = [
            (side.bytes, i)
            for i, side in enumerate((left, right))
            if side.buildable and side.bytes <= self.broadcast_threshold_bytes
        ]
        return min(builds)[1] if builds else None

    def join_cost(
        self, left: JoinInput, right: JoinInput, keys: Sequence[tuple[str, str]], output_bytes: float
    ) -> tuple[float, str, frozenset[str] | None]:
        """(cost, algorithm, partitioning of the output) of joining left and right."""
        output = output_bytes * OUTPUT_BYTE_COST
        if not keys:
            # No equi key: a nested-loop join; the smaller side is broadcast whatever its size.
            return min(left.bytes, right.bytes) * self.parallelism + output, "nested loop", None
        built = self.broadcast_side(left, right)
        if built is not None:
            return (left, right)[built].bytes * self.parallelism + output, "broadcast", None
        key_set = frozenset(k for pair in keys for k in pair)
        shuffle = sum(side.bytes + EXCHANGE_FIXED_BYTES for side in (left, right) if not _partitioned(side, key_set))
        return shuffle + output, "sort-merge", key_set


def _partitioned(side: JoinInput, keys: frozenset[str]) -> bool:
    return side.partitioned_on is not None and bool(side.partitioned_on & keys)


# A skew-join rewrite reads both inputs of the join twice (once per UNION ALL branch, each
# filtered by the hot keys): that repeated work, as a share of the join's own work.
REPEATED_SCAN_SHARE = 0.5


def skew_join_speedup(largest_key_share: float, task_slots: int) -> float:
    """How much faster a skew-join rewrite should run than the sort-merge join it replaces.

    The sort-merge join lasts as long as its longest task: one key's rows all go to one task, so
    at least the largest hot key's share of the work, and never less than an even split over the
    task slots. The rewrite spreads the hot rows over every slot (the other side's hot rows are
    broadcast), at the price of reading the inputs again.

    >>> round(skew_join_speedup(0.9, 2), 2), round(skew_join_speedup(0.5, 2), 2), round(skew_join_speedup(0.5, 16), 2)
    (1.2, 0.67, 5.33)
    """
    slots = max(int(task_slots), 1)
    written = max(largest_key_share, 1.0 / slots)
    rewritten = (1.0 + REPEATED_SCAN_SHARE) / slots
    return written / rewritten


# -- what reading a relation costs (every rule that weighs a scan asks here)


def columns_read(scope: Scope, aliases: Collection[str], qualified: bool = False) -> list[str]:
    """The columns the block reads of its FROM items `aliases`, each once however often the block
    names it (a row holds a column once: counted per mention, `SUM(f.v), MAX(f.v) ... WHERE f.v > 1`
    read f.v three times as wide). `qualified`: as "alias.column", the names of a join's rows.

    >>> from sqlglot import parse_one
    >>> from sqlglot.optimizer.scope import build_scope
    >>> scope = build_scope(parse_one("SELECT f.k, SUM(f.v), MAX(f.v) FROM db.f AS f WHERE f.v > 1 GROUP BY f.k"))
    >>> columns_read(scope, ["f"]), columns_read(scope, ["f"], qualified=True)
    (['k', 'v'], ['f.k', 'f.v'])
    """
    names = (f"{c.table}.{c.name}" if qualified else c.name for c in scope.columns if c.table in aliases)
    return list(dict.fromkeys(name.lower() for name in names))


def table_read_bytes(estimator: Estimator, scope: Scope, alias: str, table: exp.Table) -> Estimate:
    """The bytes of the columns the block reads of `table` (FROM item `alias`), before its
    filters: what a scan of it reads, whatever the rest of the plan (times SCAN_BYTE_COST, what
    reading them costs)."""
    return estimator.table(table).bytes(columns_read(scope, [alias]))


# -- computing an input a second time (the correlation rules weigh it against a window or a merge)


def compute_cost(estimator: Estimator, scope: Scope, broadcast_threshold_bytes: float) -> Estimate:
    """What computing this block once more costs, in bytes moved (the cost model's unit): every
    physical column read at SCAN_BYTE_COST a byte; every join input too big to broadcast shuffled
    once; an aggregate's output shuffled once. Absent when any row count is absent."""
    select = scope.expression
    if not isinstance(select, exp.Select):
        return Estimate.absent()
    total = Estimate.exact(0)
    joined = bool(select.args.get("joins"))
    for alias, (_node, source) in scope.selected_sources.items():
        if isinstance(source, exp.Table):
            read = table_read_bytes(estimator, scope, alias, source)
            if read.is_absent:
                return Estimate.absent()
            total = total + read * SCAN_BYTE_COST
        elif isinstance(source, Scope):
            inner = compute_cost(estimator, source, broadcast_threshold_bytes)
            read = estimator.estimate(source.expression).bytes()
            if inner.is_absent or read.is_absent:
                return Estimate.absent()
            total = total + inner
        else:
            return Estimate.absent()
        if joined and read.value > broadcast_threshold_bytes:
            total = total + read
    if select.args.get("group"):
        out = estimator.estimate(select).bytes()
        if out.is_absent:
            return Estimate.absent()
        total = total + out
    return total


@dataclass(frozen=True)
class Stage:
    """The work of a block's last stage, above its last shuffle exchanges: what Spark repeats when
    it computes the block a second time and reuses those exchanges (spark.sql.exchange.reuse)."""

    cost: Estimate
    # Per hash-partitioning key, the equivalent columns ("alias.column" inside a block, output
    # names once the block is read from outside); None when not hash-partitioned.
    partitioned_on: tuple[frozenset[str], ...] | None
    # What that work is, for the decision record.
    redone: str


def recompute_after_reuse(estimator: Estimator, scope: Scope, alias: str, broadcast_threshold_bytes: float) -> Stage:
    """What reading FROM item `alias` of `scope` once more costs Spark (bytes moved), given that
    identical exchanges of both reads run once: a table is scanned again; a CTE or derived table
    repeats only the work above its last exchanges (`last_stage`). Absent without statistics.

    >>> import sqlglot
    >>> from sqlglot.optimizer.scope import build_scope
    >>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
    >>> schema = {"db": {"f": {"k": "int", "c": "int", "v": "double"}, "g": {"k": "int", "w": "double"}}}
    >>> stats = StatsCatalog.from_dict({
    ...     "db.f": {"row_count": 10**7, "columns": {"k": {"ndv": 10**6}, "c": {"ndv": 10}}},
    ...     "db.g": {"row_count": 10**6, "columns": {"k": {"ndv": 10**6}}}})
    >>> def redone(body):
    ...     sql = f"WITH s AS ({body}) SELECT * FROM s AS s"
    ...     tree = sqlglot.parse_one(sql)
    ...     return recompute_after_reuse(Estimator(tree, schema, stats), build_scope(tree), "s", 10 * 2**20).redone
    >>> redone("SELECT f.c AS c, SUM(f.v) AS t FROM db.f AS f GROUP BY f.c")
    'only the final aggregate (Spark reuses the exchange below it)'
    >>> print(redone("SELECT f.k AS k, SUM(f.v * g.w) AS t FROM db.f AS f JOIN db.g AS g ON f.k = g.k GROUP BY f.k"))
    ... # doctest: +NORMALIZE_WHITESPACE
    the sort-merge join of f and g (sorting its inputs again) and the aggregate on it
    (grouped by the join key: no exchange between them)
    """
    _node, source = scope.selected_sources[alias]
    if isinstance(source, exp.Table):
        read = table_read_bytes(estimator, scope, alias, source)
        return Stage(read * SCAN_BYTE_COST, None, f"a second scan of {source.name}")
    if isinstance(source, Scope):
        return last_stage(estimator, source, broadcast_threshold_bytes)
    return Stage(Estimate.absent(), None, "an input of unknown shape")


def last_stage(estimator: Estimator, scope: Scope, broadcast_threshold_bytes: float) -> Stage:
    """The work of the block's last stage, as Spark plans it by default: joins in written order,
    a relation (or a left input that is one relation) under the broadcast threshold broadcast,
    other joins sort-merge joins that shuffle both inputs (unless one is already hash-partitioned
    on the keys); an aggregate needs an exchange unless its input is hash-partitioned on a subset
    of its grouping keys. Work below an exchange is not in the stage. Absent without statistics
    or for shapes not modelled (nested joins, joins without an equality)."""
    select = scope.expression
    if not isinstance(select, exp.Select) or not select.args.get("from_"):
        return Stage(Estimate.absent(), None, "a block that is not a SELECT")
    items = from_items(select)
    if any(nested_join(item) is not None or item.alias_or_name not in scope.selected_sources for item in items):
        return Stage(Estimate.absent(), None, "a nested join (not modelled)")
    where = select.args.get("where")
    where_conjuncts = conjuncts(where.this if where else None)
    steps = estimator.join_steps(scope)
    first = items[0].alias_or_name
    acc = _item_stage(estimator, scope, first, broadcast_threshold_bytes)
    acc_bytes = _read_bytes(steps[0], scope, [first])
    joined = [first]
    for join, step in zip(select.args.get("joins") or [], steps[1:]):
        alias = join.this.alias_or_name
        right = _item_stage(estimator, scope, alias, broadcast_threshold_bytes)
        right_bytes = _read_bytes(estimator.relation_in_join(scope, join.this, where_conjuncts), scope, [alias])
        if acc_bytes.is_absent or right_bytes.is_absent:
            return Stage(Estimate.absent(), None, "statistics absent")
        keys = _join_keys(conjuncts(join.args.get("on")) + where_conjuncts, joined, alias)
        if not keys:
            return Stage(Estimate.absent(), None, "a join without an equality (not modelled)")
        if right_bytes.value <= broadcast_threshold_bytes:
            # Broadcast: its exchange is reused, the streamed side's stage goes on. Spark also
            # counts the output as partitioned on the build side's equal keys, but only where the
            # broadcast comes after the shuffle: reorder_joins may put it first (measured: the
            # final aggregate then sits behind an exchange and the window gained 1.01x), so the
            # partitioning is not extended to them.
            pass
        elif len(joined) == 1 and acc_bytes.value <= broadcast_threshold_bytes:
            acc = right  # the left relation is broadcast, the right one streams
        else:
            cost = (acc_bytes + right_bytes) * RESORT_BYTE_COST
            # A side already partitioned on the keys is not shuffled: its work stays in the stage.
            for side in (acc, right):
                if side.partitioned_on and _covered(side.partitioned_on, keys):
                    cost = cost + side.cost
            acc = Stage(
                cost, keys, f"the sort-merge join of {', '.join(joined)} and {alias} (sorting its inputs again)"
            )
        joined.append(alias)
        acc_bytes = _read_bytes(step, scope, joined)
    return _aggregate_stage(estimator, select, acc, acc_bytes)


def _aggregate_stage(estimator: Estimator, select: exp.Select, acc: Stage, acc_bytes: Estimate) -> Stage:
    """The block's last stage once its aggregate (if any) is on top of its joins' stage `acc`."""
    group = select.args.get("group")
    if group is not None:
        out = estimator.estimate(select).bytes()
        if out.is_absent or acc_bytes.is_absent:
            return Stage(Estimate.absent(), None, "statistics absent")
        grouped = frozenset(f"{c.table}.{c.name}".lower() for c in group.expressions if isinstance(c, exp.Column))
        if acc.partitioned_on and all(key & grouped for key in acc.partitioned_on):
            acc = Stage(
                acc.cost + acc_bytes * AGGREGATE_BYTE_COST,
                acc.partitioned_on,
                acc.redone + " and the aggregate on it (grouped by the join key: no exchange between them)",
            )
        else:
            acc = Stage(
                out * AGGREGATE_BYTE_COST,
                tuple(frozenset([g]) for g in grouped),
                "only the final aggregate (Spark reuses the exchange below it)",
            )
    elif any(p.find(exp.AggFunc) for p in select.selects):
        out = estimator.estimate(select).bytes()
        return Stage(out * AGGREGATE_BYTE_COST, None, "only the final aggregate (Spark reuses the exchange below it)")
    return Stage(acc.cost, _output_partitioning(select, acc.partitioned_on), acc.redone)


def _item_stage(estimator: Estimator, scope: Scope, alias: str, broadcast_threshold_bytes: float) -> Stage:
    """A FROM item's own stage within the block, its partitioning in the block's column names."""
    stage = recompute_after_reuse(estimator, scope, alias, broadcast_threshold_bytes)
    if stage.partitioned_on is None:
        return stage
    return Stage(
        stage.cost, tuple(frozenset(f"{alias}.{n}".lower() for n in key) for key in stage.partitioned_on), stage.redone
    )


def _read_bytes(relation: RelationEstimate, scope: Scope, aliases: list[str]) -> Estimate:
    return relation.bytes(columns_read(scope, aliases, qualified=True))


def _join_keys(predicates: list[exp.Expression], left: list[str], right: str) -> tuple[frozenset[str], ...]:
    keys = []
    for predicate in predicates:
        pair = equi_pair(predicate)
        if pair is None:
            continue
        a, b = pair
        if (a.table in left and b.table == right) or (b.table in left and a.table == right):
            keys.append(frozenset({f"{a.table}.{a.name}".lower(), f"{b.table}.{b.name}".lower()}))
    return tuple(keys)


def _covered(partitioned_on: tuple[frozenset[str], ...], keys: tuple[frozenset[str], ...]) -> bool:
    """Spark keeps a hash partitioning when its keys are among the join keys."""
    return all(any(part & key for key in keys) for part in partitioned_on)


def _output_partitioning(select: exp.Select, partitioned_on) -> tuple[frozenset[str], ...] | None:
    """The partitioning in the block's output names; None when a key is not in the output."""
    if not partitioned_on:
        return None
    out = []
    for key in partitioned_on:
        names = frozenset(
            p.alias_or_name.lower()
            for p in select.selects
            if isinstance(p.unalias(), exp.Column) and f"{p.unalias().table}.{p.unalias().name}".lower() in key
        )
        if not names:
            return None
        out.append(names)
    return tuple(out)
