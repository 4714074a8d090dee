"""What the correlation rules (merge_correlated_aggregates, merge_sibling_aggregates) share:
which relation a FROM item reads, the conjuncts of an all-inner block, column renaming, and the
cost of computing a relation once more.

Two FROM items read the same input when both are the same physical table, or both name the same
CTE. A derived table is never "the same" as another one (we do not compare query texts here).

>>> import sqlglot
>>> from sqlglot.optimizer.scope import build_scope
>>> scope = build_scope(sqlglot.parse_one("WITH c AS (SELECT 1 AS a) SELECT * FROM db.t AS x, c AS y, db.t AS z"))
>>> [identity(scope, a) for a in ("x", "y", "z")]
[('table', 'db.t'), ('cte', 'c'), ('table', 'db.t')]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.cost_model import AGGREGATE_BYTE_COST, RESORT_BYTE_COST, SCAN_BYTE_COST
from dbt.adapters.hiveopt.optimizer.estimator import (
    Estimator,
    RelationEstimate,
    aliases_of,
    conjuncts,
    equi_pair,
    nested_join,
)
from dbt.adapters.hiveopt.optimizer.prepare import deterministic
from dbt.adapters.hiveopt.optimizer.statistics import Estimate

# Aggregates whose value over a window partition equals their value over the group, and that
# Spark can compute as window functions (DISTINCT ones it cannot: DISTINCT_WINDOW_FUNCTION_UNSUPPORTED).
WINDOWABLE_AGGREGATES = (exp.Avg, exp.Sum, exp.Min, exp.Max, exp.Count)
# Prefix of the columns the rules add; numbered so they never collide with the query's own.
ADDED_COLUMN_PREFIX = "_hiveopt_"


def identity(scope: Scope, alias: str) -> tuple[str, str] | None:
    """('table', 'db.t') or ('cte', name) for the FROM item `alias` of `scope`; None otherwise."""
    entry = scope.selected_sources.get(alias)
    if entry is None:
        return None
    node, source = entry
    if isinstance(source, exp.Table):
        return "table", ".".join(p for p in (source.db, source.name) if p).lower()
    if isinstance(node, exp.Table) and isinstance(source, Scope) and source.is_cte:
        return "cte", node.name.lower()
    return None


def from_items(select: exp.Select) -> list[exp.Expression]:
    """The block's FROM item and the items of its joins, in order."""
    items = [select.args["from_"].this] if select.args.get("from_") else []
    return items + [join.this for join in select.args.get("joins") or []]


def non_inner_join(select: exp.Select) -> str | None:
    """A description of the first join that is not an inner (or cross) join, else None."""
    for join in select.args.get("joins") or []:
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        if side or kind not in ("", "INNER", "CROSS") or join.args.get("using") or (join.args.get("method") or ""):
            return " ".join(p for p in (join.args.get("method") or "", side, kind, "JOIN") if p).strip()
    return None


def block_conjuncts(select: exp.Select, inner_only: bool = False) -> list[exp.Expression]:
    """WHERE and every ON conjunct of an all-inner block (all of them filter the same rows); with
    `inner_only`, the ON conjuncts of inner joins only (an outer join's ON filters no row out)."""
    where = select.args.get("where")
    out = conjuncts(where.this if where else None)
    for join in select.args.get("joins") or []:
        if not (inner_only and join.side):
            out += conjuncts(join.args.get("on"))
    return out


def aggregate_shape_problem(select: exp.Select, where: str) -> str | None:
    """Why an aggregate block cannot be merged into another read ("... inside {where}"), else None:
    clauses that filter or cut its groups, windows, nested subqueries, non-deterministic calls.

    >>> import sqlglot
    >>> aggregate_shape_problem(sqlglot.parse_one("SELECT k, SUM(v) FROM t GROUP BY k HAVING SUM(v) > 1"), "the aggregate")
    'HAVING inside the aggregate'
    """
    for arg, clause in (
        ("having", "HAVING"),
        ("limit", "LIMIT"),
        ("offset", "OFFSET"),
        ("distinct", "SELECT DISTINCT"),
        ("order", "ORDER BY"),
        ("qualify", "QUALIFY"),
    ):
        if select.args.get(arg):
            return f"{clause} inside {where}"
    if select.find(exp.Window):
        return f"a window function inside {where}"
    if any(s is not select for s in select.find_all(exp.Select)):
        return f"a nested subquery inside {where}"
    if not deterministic(select):
        return f"a non-deterministic expression inside {where}"
    return None


def renamed(node: exp.Expression, old: str, new: str) -> exp.Expression:
    """A copy of `node` with columns of table alias `old` pointed at alias `new`."""
    return renamed_all(node, {old: new})


def renamed_all(node: exp.Expression, mapping: dict[str, str]) -> exp.Expression:
    """A copy of `node` with columns of each alias in `mapping` pointed at the mapped alias (at once:
    a -> b and b -> a swap)."""
    copy = node.copy()
    for column in copy.find_all(exp.Column):
        if column.table in mapping:
            column.set("table", exp.to_identifier(mapping[column.table]))
    return copy


def normalized(node: exp.Expression) -> str:
    return node.sql(dialect="spark")


def local_to(predicate: exp.Expression, alias: str) -> bool:
    return aliases_of(predicate) == {alias} and predicate.find(exp.Subquery) is None


def fresh_names(expression: exp.Expression, count: int, *also: exp.Expression) -> list[str]:
    """`count` column names unused anywhere in the query (and in `also`, parts not yet in it)."""
    used = {i.name.lower() for node in (expression, *also) for i in node.find_all(exp.Identifier)}
    names, n = [], 0
    while len(names) < count:
        name = f"{ADDED_COLUMN_PREFIX}{n}"
        if name not in used:
            names.append(name)
        n += 1
    return names


def columns_of(select: exp.Select, scope: Scope, alias: str, all_scopes: Iterable[Scope]) -> list[str]:
    """Names of the columns of FROM item `alias` that the block reads, its own subqueries included
    (where they refer to it from outside), in first-seen order."""
    names: list[str] = []
    for s in all_scopes:
        if s is not scope and not _inside(s.expression, select):
            continue
        if s is not scope and alias in s.sources:
            continue  # a subquery with its own relation of that name
        for column in s.columns:
            if column.table == alias and column.name not in names:
                names.append(column.name)
    return names


def _inside(node: exp.Expression, ancestor: exp.Expression) -> bool:
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent
    return False


def replace_columns(select: exp.Select, mapping: dict[tuple[str, str], exp.Expression]) -> None:
    """Replace columns `alias.name` (keys lowercase) anywhere in the block by copies of the mapped
    expressions; subqueries that define a relation of that alias themselves keep theirs."""
    aliases = {a for a, _ in mapping}
    for column in list(select.find_all(exp.Column)):
        key = (column.table.lower(), column.name.lower())
        if key in mapping and not shadowed(column, select, aliases):
            column.replace(mapping[key].copy())


def shadowed(column: exp.Column, select: exp.Select, aliases) -> bool:
    """Whether a query between `column` and `select` reads its own relation named by one of
    `aliases` (then the column is that relation's, not the block's)."""
    node = column.parent
    while node is not None and node is not select:
        if isinstance(node, exp.Select) and any(item.alias_or_name in aliases for item in from_items(node)):
            return True
        node = node.parent
    return False


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
            relation = estimator.table(source)
            read = relation.bytes(c.name for c in scope.columns if c.table == alias)
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
    >>> stats = StatsCatalog.from_dict({"db.f": {"row_count": 10**7, "columns": {"k": {"ndv": 10**6}, "c": {"ndv": 10}}},
    ...                                 "db.g": {"row_count": 10**6, "columns": {"k": {"ndv": 10**6}}}})
    >>> def redone(body):
    ...     sql = f"WITH s AS ({body}) SELECT * FROM s AS s"
    ...     tree = sqlglot.parse_one(sql)
    ...     return recompute_after_reuse(Estimator(tree, schema, stats), build_scope(tree), "s", 10 * 2**20).redone
    >>> redone("SELECT f.c AS c, SUM(f.v) AS t FROM db.f AS f GROUP BY f.c")
    'only the final aggregate (Spark reuses the exchange below it)'
    >>> redone("SELECT f.k AS k, SUM(f.v * g.w) AS t FROM db.f AS f JOIN db.g AS g ON f.k = g.k GROUP BY f.k")
    'the sort-merge join of f and g (sorting its inputs again) and the aggregate on it (grouped by the join key: no exchange between them)'
    """
    _node, source = scope.selected_sources[alias]
    if isinstance(source, exp.Table):
        read = estimator.table(source).bytes(c.name for c in scope.columns if c.table == alias)
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
            for side in (
                acc,
                right,
            ):  # a side already partitioned on the keys is not shuffled: its work stays in the stage
                if side.partitioned_on and _covered(side.partitioned_on, keys):
                    cost = cost + side.cost
            acc = Stage(
                cost, keys, f"the sort-merge join of {', '.join(joined)} and {alias} (sorting its inputs again)"
            )
        joined.append(alias)
        acc_bytes = _read_bytes(step, scope, joined)
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
    return relation.bytes(f"{c.table}.{c.name}" for c in scope.columns if c.table in aliases)


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


def remove_item(select: exp.Select, alias: str) -> None:
    """Drop FROM item `alias` from an all-inner block; its ON conjuncts move to WHERE."""
    joins = list(select.args.get("joins") or [])
    moved: list[exp.Expression] = []
    from_item = select.args["from_"].this
    if from_item.alias_or_name == alias:
        first = joins.pop(0)
        if first.args.get("on"):
            moved.append(first.args["on"])
        select.set("from_", exp.From(this=first.this))
    else:
        for join in joins:
            if join.this.alias_or_name == alias:
                if join.args.get("on"):
                    moved.append(join.args["on"])
                joins.remove(join)
                break
    select.set("joins", joins or None)
    if moved:
        add_where(select, moved)


def add_where(select: exp.Select, predicates: list[exp.Expression]) -> None:
    where = select.args.get("where")
    parts = ([where.this] if where else []) + list(predicates)
    select.set("where", exp.Where(this=exp.and_(*parts, copy=False)) if parts else None)


def drop_conjuncts(select: exp.Select, doomed: list[exp.Expression]) -> None:
    """Remove these conjunct nodes (by identity) from WHERE and ON clauses."""
    ids = {id(d) for d in doomed}
    for holder, key in [(select, "where")] + [(j, "on") for j in select.args.get("joins") or []]:
        clause = holder.args.get(key)
        if clause is None:
            continue
        body = clause.this if key == "where" else clause
        kept = [c for c in conjuncts(body) if id(c) not in ids]
        if len(kept) == len(conjuncts(body)):
            continue
        rebuilt = exp.and_(*kept, copy=False) if kept else None
        if key == "where":
            holder.set("where", exp.Where(this=rebuilt) if rebuilt is not None else None)
        else:
            holder.set("on", rebuilt)
