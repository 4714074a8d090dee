"""Reorder inner joins by cost (Hive's Calcite CBO, phase 1).

What it does, when it fires and what was measured: docs/rules/reorder_joins.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.blocks import join_blocks
from dbt.adapters.hiveopt.optimizer.config import DEFAULT_REORDER_MIN_GAIN, OptimizerConfig
from dbt.adapters.hiveopt.optimizer.cost_model import (
    SCAN_BYTE_COST,
    CostModel,
    JoinInput,
    columns_read,
    table_read_bytes,
)
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog, Skip
from dbt.adapters.hiveopt.optimizer.enumerate_joins import MAX_DP_PAIRS, Plan, best_plans
from dbt.adapters.hiveopt.optimizer.estimator import Estimator, join_cardinality
from dbt.adapters.hiveopt.optimizer.join_graph import PREFIX, JoinGraph, build_join_graph, next_run_start
from dbt.adapters.hiveopt.optimizer.relation_estimates import RelationEstimate
from dbt.adapters.hiveopt.optimizer.syntax import aliases_of, conjuncts, relation_label

# Rewrite only when the best tree saves at least this share of the block's work: its joins and the
# reading of its relations, which every order pays. Estimates are estimates, and an unchanged query
# is the safest query. Counted against the joins alone, reorders that saved 1-6% of their block's
# work fired (TPC-DS SF 1 q42, q52, q68, q79, q80, q96: broadcast probes over a big scan moved;
# 0.86-1.06x), and TPC-H Q7's at 9.95%.
MIN_RELATIVE_GAIN = 0.10
# And only when the best tree's estimated cost is at most 1/MIN_ESTIMATED_GAIN of the written
# order's (the default of the `reorder_min_gain` setting). The calibration sweep (bench/calibrate.py
# --parts reorder, docs/calibration.md) timed each reorder of TPC-H SF 1 against the written order,
# both with select_join_algorithms' hints (which the estimate assumes): the measured gain was
# 0.24-0.80 of the estimated one, median 0.59. So an estimate must promise 1/0.59 = 1.7x for the
# median reorder to pay: those estimated at 1.22x (Q9), 1.35x (Q21) and 1.66x (Q2 in a bad order)
# measured 0.98x, 1.03x and 0.94x; those at 2.19-7.80x measured 1.30-2.43x.
MIN_ESTIMATED_GAIN = DEFAULT_REORDER_MIN_GAIN
MIN_RELATIONS = 3
# A bushy tree is written as nested joins `(a JOIN b ON ...)`, which Spark ran 20-25% slower than
# the left-deep tree of equal estimated cost on TPC-H Q2, Q7 and Q8 (SF 1, measured here). So a
# bushy tree must be this many times cheaper than the best left-deep one to be chosen.
BUSHY_MIN_GAIN = 2.0


@dataclass(frozen=True, slots=True)
class PlanShape:
    """What the join order's cost model needs of a (partial) plan besides its rows."""

    width: float
    # Join keys the output is hash-partitioned on (a bucketed table, a sort-merge join's output).
    partitioned_on: frozenset[str] | None
    # What Spark's static estimate makes of its size: files multiplied (unknown: infinite).
    spark_bytes: float
    # A relation is named by a hint; the joins before a barrier are not one relation.
    hintable: bool
    algorithm: str | None = None


class _Planner:
    """Leaf and join plans of one graph, for the enumerator."""

    def __init__(
        self,
        graph: JoinGraph,
        leaves: list[RelationEstimate],
        widths: list[float],
        model: CostModel,
        bucketed: list[frozenset[str] | None] | None = None,
        file_bytes: list[float] | None = None,
    ):
        self.graph, self.leaves, self.widths, self.model = graph, leaves, widths, model
        # What Spark's static estimate starts from: each table's size on disk (unknown: infinite).
        self.file_bytes = file_bytes or [float("inf")] * len(graph.aliases)
        # A table bucketed on a join key is already partitioned on it: joining on it shuffles nothing.
        self.bucketed = bucketed or [None] * len(graph.aliases)
        self.index = {alias: i for i, alias in enumerate(graph.aliases)}
        self.adj = [0] * len(graph.aliases)
        # The enumerator joins tens of thousands of pairs: what each edge contributes is read once.
        # (bit of one end, bit of the other, NDV divisor or None when absent, the key pair)
        self.edges: list[tuple[int, int, float | None, tuple[str, str]]] = []
        for edge in graph.edges:
            a, b = self.index[edge.left], self.index[edge.right]
            self.adj[a] |= 1 << b
            self.adj[b] |= 1 << a
            ca, cb = edge.columns
            ndv_a, ndv_b = self._column(edge.left, ca).ndv, self._column(edge.right, cb).ndv
            divisor = None if ndv_a.is_absent or ndv_b.is_absent else max(ndv_a.value, ndv_b.value, 1.0)
            self.edges.append((1 << a, 1 << b, divisor, (f"{ca.table}.{ca.name}", f"{cb.table}.{cb.name}")))
        self.complex_masks = [self._mask(read) for read, _ in graph.complex_predicates]
        self._crossings: dict[tuple[int, int], tuple[list[tuple[str, str]], list[float | None], int]] = {}

    def _column(self, node: str, column: exp.Column):
        leaf = self.leaves[self.index[node]]
        # A relation's estimate names its columns; the prefix's (a join) names them alias.column.
        return leaf.column(f"{column.table}.{column.name}" if node == PREFIX else column.name)

    def _mask(self, aliases) -> int:
        return sum(1 << self.index[a] for a in aliases)

    def leaf(self, i: int) -> Plan:
        rows = self.leaves[i].rows.value
        return Plan(
            1 << i,
            rows=rows,
            cost=0.0,
            info=PlanShape(
                width=self.widths[i],
                partitioned_on=self.bucketed[i],
                spark_bytes=self.file_bytes[i],
                hintable=self.graph.aliases[i] != PREFIX,
            ),
        )

    def _crossing(self, lr: int, rr: int) -> tuple[list[tuple[str, str]], list[float | None], int]:
        """(key pairs, their NDV divisors, other predicates) between two disjoint sets of relations:
        the same for every plan of the two sets, so read once per pair of sets."""
        found = self._crossings.get((lr, rr))
        if found is None:
            union = lr | rr
            keys: list[tuple[str, str]] = []
            divisors: list[float | None] = []
            for a, b, divisor, key in self.edges:
                if (a & lr and b & rr) or (a & rr and b & lr):
                    divisors.append(divisor)
                    keys.append(key)
            crossing = sum(
                1 for mask in self.complex_masks if mask & union == mask and mask & lr != mask and mask & rr != mask
            )
            found = self._crossings[(lr, rr)] = (keys, divisors, crossing)
        return found

    def _input(self, plan: Plan) -> JoinInput:
        shape: PlanShape = plan.info
        buildable = shape.hintable or shape.spark_bytes <= self.model.broadcast_threshold_bytes
        return JoinInput(plan.rows * shape.width, shape.partitioned_on, buildable)

    def join(self, left: Plan, right: Plan) -> Plan:
        lr, rr = left.relations, right.relations
        keys, divisors, crossing = self._crossing(min(lr, rr), max(lr, rr))
        rows = join_cardinality(left.rows, right.rows, divisors, crossing)
        width = left.info.width + right.info.width
        cost, algorithm, partitioning = self.model.join_cost(self._input(left), self._input(right), keys, rows * width)
        # Spark sizes a join without column statistics as the product of its inputs' sizes.
        spark_bytes = left.info.spark_bytes * right.info.spark_bytes
        return Plan(
            lr | rr,
            left,
            right,
            rows=rows,
            cost=left.cost + right.cost + cost,
            info=PlanShape(width, partitioning, spark_bytes, hintable=False, algorithm=algorithm),
        )

    def written(self) -> Plan:
        """The written order as Spark runs it: its ReorderJoin (no CBO) joins, to what is joined so
        far, the first relation of the rest (in written order) that a condition connects to it,
        and the next one only when none does (a cross join). TPC-H Q8 lists part, supplier,
        lineitem, ...: Spark joins part, lineitem, supplier, ... (EXPLAIN). Costed literally, the
        part x supplier cross product put the written order at 1.57e9 against 6.89e7 for the
        reorder, a 23x estimated gain where Spark measured 0.9-1.0x."""
        plan = self.leaf(0)
        rest = list(range(1, len(self.graph.aliases)))
        while rest:
            pick = next((i for i in rest if self._connects(plan.relations, i)), rest[0])
            rest.remove(pick)
            plan = self.join(plan, self.leaf(pick))
        return plan

    def _connects(self, joined: int, i: int) -> bool:
        """Whether a join condition reads both `joined` (a set of relations) and relation `i`."""
        one = 1 << i
        if self.adj[i] & joined:
            return True
        union = joined | one
        return any(mask & union == mask and mask & joined != mask and mask != one for mask in self.complex_masks)

    def describe(self, plan: Plan) -> str:
        if plan.is_leaf:
            return self.graph.aliases[plan.leaves()[0]]
        return f"({self.describe(plan.left)} ⋈ {self.describe(plan.right)})"

    def probed_relation(self, plan: Plan) -> int | None:
        """The relation streamed through every join of `plan` when the plan is one pipeline of
        broadcast probes over it (each join builds one relation, the one the cost model builds,
        and streams the rest), else None. Two such plans over the same relation differ only in
        the order of the probes: Spark's whole-stage code runs them over each streamed row in
        turn, and what the cost model charges for the rows between them is never paid (TPC-DS SF
        1, 27 reorders whose every join was a broadcast: 7 won, 14 lost, net -0.23 s; q03,
        estimated 35x, measured 0.86x)."""
        if plan.is_leaf:
            return plan.leaves()[0]
        if plan.info.algorithm != "broadcast":
            return None
        side = self.model.broadcast_side(self._input(plan.left), self._input(plan.right))
        if side is None:
            return None
        built, streamed = (plan.left, plan.right) if side == 0 else (plan.right, plan.left)
        return self.probed_relation(streamed) if built.is_leaf else None

    def intermediates(self, plan: Plan) -> list[dict[str, object]]:
        if plan.is_leaf:
            return []
        return (
            self.intermediates(plan.left)
            + self.intermediates(plan.right)
            + [{"join": self.describe(plan), "rows": round(plan.rows), "algorithm": plan.info.algorithm}]
        )


def _scan_cost(scope, graph: JoinGraph, planner: _Planner, estimator: Estimator) -> float:
    """What reading the run's relations costs, the same in every order: the columns read of each
    table before its filters, SCAN_BYTE_COST a byte; a derived table or the joins before a barrier
    at their estimated output (a lower bound of their work)."""
    total = 0.0
    for i, alias in enumerate(graph.aliases):
        source = graph.sources.get(alias)
        if isinstance(source, exp.Table):
            size = table_read_bytes(estimator, scope, alias, source)
            if not size.is_absent:
                total += size.value * SCAN_BYTE_COST
                continue
        total += planner.leaves[i].rows.value * (planner.widths[i] or 0.0) * SCAN_BYTE_COST
    return total


def _bucket_keys(source: exp.Expression, alias: str, bucketing: dict[str, list[str]]) -> frozenset[str] | None:
    if not isinstance(source, exp.Table):
        return None
    columns = bucketing.get(".".join(p for p in (source.db, source.name) if p).lower())
    return frozenset(f"{alias}.{c.lower()}" for c in columns) if columns else None


def _file_bytes(source: exp.Expression | None, statistics) -> float:
    if not isinstance(source, exp.Table):
        return float("inf")
    stats = statistics.get(".".join(p for p in (source.db, source.name) if p))
    return float("inf") if stats is None or stats.size_bytes.is_absent else stats.size_bytes.value


def reorder_joins(
    expression: exp.Expression,
    estimator: Estimator,
    cost_model: CostModel,
    log: DecisionLog,
    bucketing: dict[str, list[str]] | None = None,
    config: OptimizerConfig | None = None,
) -> exp.Expression:
    """Rewrite each block's leading run of inner joins in the order the cost model finds
    cheapest, when it beats the written order by MIN_RELATIVE_GAIN and is estimated
    `config.reorder_min_gain` (MIN_ESTIMATED_GAIN) times cheaper. Details: docs/rules/reorder_joins.md.

    >>> from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
    >>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
    >>> schema = {"db": {"f": {"k": "int", "d": "int"}, "d1": {"k": "int", "v": "string"}, "d2": {"d": "int"}}}
    >>> stats = StatsCatalog.from_dict({
    ...     "db.f": {"row_count": 10**9, "columns": {"k": {"ndv": 10**6}, "d": {"ndv": 10**6}}},
    ...     "db.d1": {"row_count": 10**6, "columns": {"k": {"ndv": 10**6}, "v": {"ndv": 10**6}}},
    ...     "db.d2": {"row_count": 10**6, "columns": {"d": {"ndv": 10**6}}}})
    >>> sql = "SELECT d1.v FROM db.d2 JOIN db.f ON f.d = d2.d JOIN db.d1 ON f.k = d1.k WHERE d1.v = 'x'"
    >>> expression = prepare_query(sql, schema).expression
    >>> estimator, log = Estimator(expression, schema, stats), DecisionLog("reorder_joins")
    >>> print(reorder_joins(expression, estimator, CostModel(10 * 2**20), log).sql())  # doctest: +NORMALIZE_WHITESPACE
    SELECT d1.v AS v FROM db.f AS f JOIN db.d1 AS d1 ON f.k = d1.k JOIN db.d2 AS d2 ON f.d = d2.d
    WHERE d1.v = 'x'
    >>> log.decisions[0].reason
    'joins reordered: estimated cost 2.3e+10 -> 2.89e+07'
    """
    # Blocks are visited innermost first and rewritten in place, so one estimator serves them all.
    model = cost_model
    min_gain = config.reorder_min_gain if config is not None else MIN_ESTIMATED_GAIN
    for scope, select, label in join_blocks(expression, log):
        start: int | None = 0
        while start is not None:
            graph = build_join_graph(select, start)
            if graph is None:
                break
            joins = select.args.get("joins") or []
            end = graph.start + graph.run_length
            following = joins[end] if end < len(joins) else None
            _reorder_run(scope, select, graph, estimator, model, bucketing or {}, log, label, min_gain)
            if following is None:
                break
            # The run may now be shorter (nested joins): find the barrier again and go past it.
            position = next(i for i, j in enumerate(select.args["joins"]) if j is following)
            start = next_run_start(select, position)
    return expression


def _reorder_run(
    scope,
    select: exp.Select,
    graph: JoinGraph,
    estimator: Estimator,
    model: CostModel,
    bucketing: dict[str, list[str]],
    log: DecisionLog,
    label: str,
    min_gain: float = MIN_ESTIMATED_GAIN,
) -> None:
    if len(graph.aliases) < MIN_RELATIONS:
        return
    if graph.start:
        label = f"{label}, joins after {graph.start} (the earlier ones as one node)"
    if graph.blocked:
        log.skipped(f"{graph.blocked}: the written order stays", block=label)
        return
    planner = _planner(scope, select, graph, estimator, model, bucketing)
    if isinstance(planner, Skip):
        planner.record_in(log, block=label)
        return
    written = planner.written()
    # The cost model's join_cost is symmetric (the smaller buildable side is built, both sides are
    # shuffled): each pair of sets is joined in one orientation only.
    bushy, left_deep, method = best_plans(
        len(graph.aliases), planner.adj, planner.leaf, planner.join, MAX_DP_PAIRS, commutative=True
    )
    best = bushy if bushy.cost * BUSHY_MIN_GAIN <= left_deep.cost else left_deep
    details = dict(
        block=label,
        relations=len(graph.aliases),
        method=method,
        cost_before=round(written.cost),
        cost_after=round(best.cost),
        best_bushy_cost=round(bushy.cost),
        written_tree=planner.describe(written),
        chosen_tree=planner.describe(best),
        intermediates=planner.intermediates(best),
        **({"barrier": graph.barrier} if graph.barrier else {}),
    )
    scans = _scan_cost(scope, graph, planner, estimator)
    details["scan_cost"] = round(scans)
    streamed = planner.probed_relation(written)
    if streamed is not None and streamed == planner.probed_relation(best):
        log.skipped(
            f"only the order of the broadcast probes over {graph.aliases[streamed]} changes: Spark runs them in one "
            "pipeline, the rows between them never stored (on TPC-DS SF 1 such reorders won 7 and lost 14)",
            **details,
        )
        return
    if written.cost - best.cost < MIN_RELATIVE_GAIN * (written.cost + scans):
        saved = (written.cost - best.cost) / (written.cost + scans) if written.cost + scans else 0.0
        log.skipped(
            "the written order is as cheap as the best one found"
            + (f" (saves {saved:.0%} of the block's work, reading its relations included)" if saved > 0 else ""),
            **details,
        )
        return
    if best.cost * min_gain > written.cost:
        log.skipped(
            f"the best order found is estimated {written.cost / best.cost:.2f}x cheaper than the written one, "
            f"under the {min_gain:g}x a reorder must promise (measured gains ran at about 0.6 of the "
            "estimated ones: docs/calibration.md)",
            **details,
        )
        return
    if not _rewrite(select, graph, planner, best):
        log.skipped("the best tree cannot be written as nested joins here", **details)
        return
    log.fired(f"joins reordered: estimated cost {written.cost:.3g} -> {best.cost:.3g}", **details)


def _planner(
    scope, select: exp.Select, graph: JoinGraph, estimator: Estimator, model: CostModel, bucketing
) -> _Planner | Skip:
    """The run's leaves from the estimator (after their local filters), ready to plan; a Skip when
    a relation has no statistics."""
    where = select.args.get("where")
    filters = conjuncts(where.this if where else None) + graph.local_on_predicates
    leaves, widths = [], []
    for alias in graph.aliases:
        if alias == PREFIX:
            leaf = estimator.join_steps(scope, graph.prefix[0], graph.prefix[1])[-1]
            read = columns_read(scope, graph.prefix_aliases, qualified=True)
        else:
            leaf = estimator.filtered_source(scope, alias, filters)
            read = columns_read(scope, [alias])
        leaves.append(leaf)
        widths.append(leaf.width(read).value if not leaf.rows.is_absent else None)
    absent = [a for a, leaf in zip(graph.aliases, leaves) if leaf.rows.is_absent]
    if absent:
        named = [relation_label(scope, a) if a != PREFIX else "the joins before the barrier" for a in absent]
        return Skip(f"statistics absent for {', '.join(named)}: the written order stays")
    bucketed = [_bucket_keys(graph.sources[a], a, bucketing) if a != PREFIX else None for a in graph.aliases]
    file_bytes = []
    for alias in graph.aliases:
        # The joins before a barrier: Spark sizes them as the product of their tables' files.
        parts = [graph.prefix[0], *(j.this for j in graph.prefix[1])] if alias == PREFIX else [graph.sources[alias]]
        file_bytes.append(math.prod(_file_bytes(part, estimator.statistics) for part in parts))
    return _Planner(graph, leaves, widths, model, bucketed, file_bytes)


def _rewrite(select: exp.Select, graph: JoinGraph, planner: _Planner, plan: Plan) -> bool:
    """Write the plan as FROM + joins. Every ON predicate of the run (and every join predicate
    taken from WHERE) goes to the lowest join holding all it reads: an inner join's ON filter on
    one relation stays an ON filter, which matters when a RIGHT or FULL join follows the run."""
    placed: list[tuple[frozenset[str], exp.Expression]] = (
        [(frozenset((e.left, e.right)), e.predicate) for e in graph.edges]
        + list(graph.complex_predicates)
        + [(frozenset(graph.node_of(a) for a in aliases_of(p)), p) for p in graph.local_on_predicates]
    )
    used = set()

    def predicates_for(left: Plan, right: Plan) -> list[exp.Expression]:
        out = []
        joined = set(_aliases(planner, left)) | set(_aliases(planner, right))
        for i, (read, predicate) in enumerate(placed):
            if i not in used and read <= joined:
                used.add(i)
                out.append(predicate.copy())
        return out

    def build(node: Plan) -> tuple[exp.Expression, list[exp.Join]] | None:
        if node.is_leaf:
            alias = graph.aliases[node.leaves()[0]]
            if alias == PREFIX:  # the block's joins up to the barrier, kept as written
                return graph.prefix[0].copy(), [j.copy() for j in graph.prefix[1]]
            return graph.sources[alias].copy(), []
        left, right = node.left, node.right
        if not right.is_leaf and left.is_leaf:
            left, right = right, left  # inner joins commute: keep the tree left-deep where it can be
        built_left = build(left)
        built_right = build(right)
        if built_left is None or built_right is None:
            return None
        first, joins = built_left
        right_first, right_joins = built_right
        if right_joins:
            if not isinstance(right_first, exp.Table):
                return None  # a derived table cannot carry nested joins in sqlglot's tree
            right_first.set("joins", right_joins)
            right_first = exp.Subquery(this=right_first)
        on = predicates_for(left, right)
        join = exp.Join(this=right_first)
        if on:
            join.set("on", exp.and_(*on) if len(on) > 1 else on[0])
        else:
            join.set("kind", "CROSS")
        return first, joins + [join]

    built = build(plan)
    if built is None or len(used) != len(placed):
        return False
    first, joins = built
    all_joins = select.args.get("joins") or []
    rest = all_joins[graph.start + graph.run_length :]
    select.set("from_", exp.From(this=first))
    select.set("joins", joins + rest)
    _drop_moved_from_where(select, graph)
    return True


def _drop_moved_from_where(select: exp.Select, graph: JoinGraph) -> None:
    """The join predicates written in WHERE now stand in ON clauses: WHERE keeps the rest."""
    if graph.moved_from_where:
        moved = {id(p) for p in graph.moved_from_where}
        where = select.args.get("where")
        kept = [p for p in conjuncts(where.this if where else None) if id(p) not in moved]
        select.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)


def _aliases(planner: _Planner, plan: Plan) -> list[str]:
    return [planner.graph.aliases[i] for i in plan.leaves()]
