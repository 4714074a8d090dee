"""Prune the big side of a join with the small side's key values (Hive's map-join partition
pruning, HIVE-5119, and its extension to unpartitioned tables).

What it does, when it fires and what was measured: docs/rules/prune_partitions_from_small_side.md.

>>> from dbt.adapters.hiveopt.optimizer import OptimizerContext, optimize
>>> from dbt.adapters.hiveopt.optimizer.context import FetchedValues, ValueFetch
>>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
>>> schema = {"db": {"f": {"k": "int", "v": "double"}, "d": {"k": "int", "c": "string"}}}
>>> stats = StatsCatalog.from_dict({
...     "db.f": {"row_count": 100_000_000, "size_bytes": 2_000_000_000, "columns": {"k": {"ndv": 1_000_000}}},
...     "db.d": {"row_count": 1_000_000, "columns": {"k": {"ndv": 1_000_000}, "c": {"ndv": 1000}}}})
>>> sql = "SELECT f.v, d.c FROM db.f JOIN db.d ON f.k = d.k WHERE d.c = 'x'"
>>> ctx = OptimizerContext(schema=schema, statistics=stats)
>>> ctx.config.sorted_keys = {"db.f": ["k"]}  # its files are written sorted by k
>>> expression = sql_expression(sql, ctx)
>>> (fetch,) = plan_value_fetches(expression, Estimator(expression, schema, stats), ctx.config, "table", {})
>>> fetch.values_query.sql("spark")
"SELECT DISTINCT d.k AS k FROM db.d AS d WHERE d.c = 'x' AND NOT d.k IS NULL LIMIT 1001"
>>> ctx.fetched_values[fetch.key] = FetchedValues(values=[3, 1, 2])
>>> ctx.config.rules["select_join_algorithms"] = False
>>> print(optimize(sql, ctx).sql)  # doctest: +NORMALIZE_WHITESPACE
SELECT f.v AS v, d.c AS c FROM (SELECT * FROM db.f AS f WHERE f.k IN (1, 2, 3)) AS f
JOIN db.d AS d ON f.k = d.k WHERE d.c = 'x'
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.blocks import block_label
from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.context import FetchedValues, ValueFetch
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.literals import base_type, literal_for
from dbt.adapters.hiveopt.optimizer.prepare import deterministic
from dbt.adapters.hiveopt.optimizer.syntax import aliases_of, conjuncts, equi_pair, is_inner_join, nested_join

# Builds that run now; anything else (views, ephemeral) is a stored or inlined definition.
BUILDS_THAT_RUN_NOW = ("table", "incremental")
# The small side must keep at most this fraction of the big key's distinct values (estimated):
# above it the filter prunes too little to pay for the fetch.
MAX_KEY_FRACTION = 0.5
# A BETWEEN (too many values for a list) must cover at most this fraction of the key's min..max.
MAX_RANGE_FRACTION = 0.5

_INTEGRAL = ("tinyint", "smallint", "int", "integer", "bigint", "byte", "short", "long")
# Key types whose values we can write back as literals that compare exactly as the join does.
# Floating point is left out (NaN joins NaN in Spark; no literal for it); timestamps too (the
# session time zone decides how a fetched value reads back).
_LITERAL_KINDS = {
    **{t: "integral" for t in _INTEGRAL},
    "decimal": "decimal",
    "string": "string",
    "varchar": "string",
    "char": "string",
    "date": "date",
}


@dataclass
class _Candidate:
    scope: Scope
    label: str
    join: exp.Join
    big_alias: str
    big_key: exp.Column
    big_table: str
    big_type: str
    small_alias: str
    reason: str
    fetch: ValueFetch
    details: dict[str, Any]
    aggregated: bool = False


def sql_expression(sql: str, context) -> exp.Expression:
    """The prepared (qualified) query, as the rules see it: for examples and tests."""
    from dbt.adapters.hiveopt.optimizer.prepare import prepare_query

    return prepare_query(sql, context.schema, context.default_db).expression


def plan_value_fetches(
    expression: exp.Expression,
    estimator: Estimator,
    config: OptimizerConfig,
    materialization: str,
    partitioning: dict[str, list[str]],
) -> list[ValueFetch]:
    """The small-side queries the adapter should run before the rules (pure: no I/O)."""
    if not config.rule_enabled("prune_partitions_from_small_side") or materialization not in BUILDS_THAT_RUN_NOW:
        return []
    fetches: dict[str, ValueFetch] = {}
    for candidate in _candidates(expression, estimator, config, partitioning, DecisionLog("plan")):
        fetches.setdefault(candidate.fetch.key, candidate.fetch)
    return list(fetches.values())


def prune_partitions_from_small_side(
    expression: exp.Expression,
    estimator: Estimator,
    config: OptimizerConfig,
    materialization: str,
    partitioning: dict[str, list[str]],
    fetched_values: dict[str, FetchedValues],
    log: DecisionLog,
) -> exp.Expression:
    """Filter the big side of a join by the small side's key values that the pre-pass
    (plan_value_fetches) fetched: an IN-list, a BETWEEN, or a semi-join filter where no values
    came. Details: docs/rules/prune_partitions_from_small_side.md.

    >>> from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
    >>> from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
    >>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
    >>> schema = {"db": {"f": {"k": "int", "v": "double"}, "d": {"k": "int", "c": "string"}}}
    >>> stats = StatsCatalog.from_dict({
    ...     "db.f": {"row_count": 10**8, "size_bytes": 2 * 10**9, "columns": {"k": {"ndv": 10**6}}},
    ...     "db.d": {"row_count": 10**6, "columns": {"k": {"ndv": 10**6}, "c": {"ndv": 1000}}}})
    >>> sql = "SELECT f.v, d.c FROM db.f JOIN db.d ON f.k = d.k WHERE d.c = 'x'"
    >>> expression = prepare_query(sql, schema).expression
    >>> estimator, config = Estimator(expression, schema, stats), OptimizerConfig(sorted_keys={"db.f": ["k"]})
    >>> (fetch,) = plan_value_fetches(expression, estimator, config, "table", {})
    >>> fetched, log = {fetch.key: FetchedValues(values=[3, 1, 2])}, DecisionLog("prune_partitions_from_small_side")
    >>> print(prune_partitions_from_small_side(expression, estimator, config, "table", {}, fetched, log).sql())
    ... # doctest: +NORMALIZE_WHITESPACE
    SELECT f.v AS v, d.c AS c FROM (SELECT * FROM db.f AS f WHERE f.k IN (1, 2, 3)) AS f
    JOIN db.d AS d ON f.k = d.k WHERE d.c = 'x'
    """
    if materialization not in BUILDS_THAT_RUN_NOW:
        if expression.find(exp.Join) is not None:
            log.skipped(f"materialized as {materialization}: a stored definition must not depend on today's data")
        return expression
    # Predicates per wrapped relation: one derived table even when several joins prune it.
    wraps: dict[int, tuple[exp.Expression, str, list[exp.Expression]]] = {}
    for candidate in list(_candidates(expression, estimator, config, partitioning, log)):
        fetched = fetched_values.get(candidate.fetch.key)
        details = dict(candidate.details)
        if fetched is None or fetched.error is not None:
            why = (
                "the small side's values were not fetched (no session connection, prune_fetch_values off, or "
                "another build)"
                if fetched is None
                else f"the small side's values could not be fetched: {fetched.error}"
            )
            predicate, kind, reason = _semi_join(candidate, why)
        else:
            predicate, kind, reason = _predicate(candidate, fetched, estimator.statistics, config)
        if predicate is None:
            log.skipped(reason, **details)
            continue
        node = _relation_node(candidate.scope.expression, candidate.big_alias)
        if node is None:
            log.skipped("the big side is not a relation of the block's FROM or JOIN", **details)
            continue
        wraps.setdefault(id(node), (node, candidate.big_alias, []))[2].append(predicate)
        if details.get("sorted_by_key") and not isinstance(predicate.args.get("query"), exp.Subquery):
            kind += " (the table is sorted by the key: the Parquet reader skips row groups by min/max)"
        log.fired(
            f"{candidate.reason}; injected {kind}",
            predicate=predicate.sql(DIALECT)[:200],
            fetch_seconds=round(fetched.seconds, 3) if fetched else 0.0,
            **details,
        )
    for node, alias, predicates in wraps.values():
        inner = node.copy()
        wrapped = exp.select(exp.Star()).from_(inner).where(exp.and_(*predicates))
        node.replace(exp.Subquery(this=wrapped, alias=exp.TableAlias(this=exp.to_identifier(alias))))
    return expression


# -- detection ------------------------------------------------------------------------------------


def _candidates(
    expression: exp.Expression,
    estimator: Estimator,
    config: OptimizerConfig,
    partitioning: dict[str, list[str]],
    log: DecisionLog,
) -> Iterator[_Candidate]:
    lowered = {f"{db}.{t}": cols for db, ts in estimator.schema.items() for t, cols in ts.items()}
    parts = {name.lower(): [c.lower() for c in cols] for name, cols in (partitioning or {}).items()}
    with_ = expression.args.get("with_")
    for scope in estimator.scopes.values():
        select = scope.expression
        if not isinstance(select, exp.Select) or not select.args.get("joins"):
            continue
        label = block_label(scope)
        joins: list[exp.Join] = select.args["joins"]
        sides = {(j.side or "").upper() for j in joins}
        where_ok = not (sides & {"RIGHT", "FULL"})
        first = select.args["from_"].this
        for join in joins:
            if nested_join(join.this) is not None or nested_join(first) is not None:
                log.skipped("a nested join: its relations are not pruned one by one", block=label)
                continue
            right = join.this.alias_or_name
            for pair in filter(None, (equi_pair(p) for p in conjuncts(join.args.get("on")))):
                for big_key, small_key in (pair, pair[::-1]):
                    big, small = big_key.table, small_key.table
                    if right not in (big, small):
                        continue  # a join condition between two earlier relations
                    why_not = _not_prunable(join, big == right)
                    if why_not is None and big != right and _preserved_earlier(joins, join):
                        why_not = "an earlier RIGHT or FULL join of the block preserves it"
                    if why_not is not None:
                        log.skipped(f"{big}: {why_not}", block=label, big=big, small=small)
                        continue
                    filters = _small_filters(select, join, small, where_ok)
                    candidate = _candidate(
                        scope, label, join, big_key, small_key, filters, with_, estimator, lowered, parts, config, log
                    )
                    if candidate is not None:
                        yield candidate


def _not_prunable(join: exp.Join, big_is_right: bool) -> str | None:
    """Why the big side of this join may not be filtered (None: it may)."""
    side, kind = (join.side or "").upper(), (join.kind or "").upper()
    if kind == "ANTI":
        return "an anti join keeps the rows that do not match: never pruned"
    if kind == "SEMI":
        return "the right side of a semi join is its filter" if big_is_right else None
    if side == "FULL":
        return "the preserved side of a FULL OUTER join: never pruned"
    if side == "LEFT" and not big_is_right:
        return "the preserved side of a LEFT join: never pruned"
    if side == "RIGHT":
        return (
            "the preserved side of a RIGHT join: never pruned"
            if big_is_right
            else "the null-supplying side of a RIGHT join: not handled (written as a LEFT join it is)"
        )
    return None


def _small_filters(select: exp.Select, join: exp.Join, small: str, where_ok: bool) -> list[exp.Expression]:
    """The small side's own filters that every row reaching the output satisfies: WHERE and
    inner-join ON conjuncts reading only it (only when no RIGHT or FULL join can bring back rows
    the join dropped), and the ON conjuncts of the join itself when the small side is its inner
    or semi right side. Sorted, so the join order the earlier rules chose does not matter."""
    found: list[exp.Expression] = []
    if where_ok:
        where = select.args.get("where")
        found += conjuncts(where.this if where else None)
        found += [p for j in select.args["joins"] if is_inner_join(j, cross=False) for p in conjuncts(j.args.get("on"))]
    kind = (join.kind or "").upper()
    if join.this.alias_or_name == small and (is_inner_join(join, cross=False) or kind == "SEMI"):
        found += conjuncts(join.args.get("on"))
    unique = {p.sql(DIALECT): p for p in found if _local(p, small)}
    return [unique[k].copy() for k in sorted(unique)]


def _preserved_earlier(joins: list[exp.Join], join: exp.Join) -> bool:
    """An earlier relation is preserved when an earlier join of the block is RIGHT or FULL."""
    for other in joins:
        if other is join:
            return False
        if (other.side or "").upper() in ("RIGHT", "FULL"):
            return True
    return False


def _candidate(
    scope: Scope,
    label: str,
    join: exp.Join,
    big_key: exp.Column,
    small_key: exp.Column,
    filters: list[exp.Expression],
    with_: exp.With | None,
    estimator: Estimator,
    lowered: dict[str, dict[str, str]],
    parts: dict[str, list[str]],
    config: OptimizerConfig,
    log: DecisionLog,
) -> _Candidate | None:
    big, small = big_key.table, small_key.table
    details: dict[str, Any] = dict(block=label, big=big, key=big_key.name, small=small)
    big_trace = _trace(scope, big, big_key.name)
    if isinstance(big_trace, str):
        log.skipped(f"big side key: {big_trace}", **details)
        return None
    table, column, aggregated = big_trace
    details.update(big_table=table, big_column=column)
    small_trace = _trace(scope, small, small_key.name)
    if isinstance(small_trace, str):
        log.skipped(f"small side key: {small_trace}", **details)
        return None
    for side, alias in (("big", big), ("small", small)):
        # A side inside a parenthesized join (reorder_joins writes them) has no node of its own
        # in the block to wrap or to read its filters from (fuzz case 5633).
        if _relation_node(scope.expression, alias) is None:
            log.skipped(
                f"the {side} side is not a relation of the block's FROM or JOIN (it sits in a parenthesized join)",
                **details,
            )
            return None
    big_type = lowered.get(table, {}).get(column, "")
    small_type = lowered.get(small_trace[0], {}).get(small_trace[1], "")
    big_kind, small_kind = _LITERAL_KINDS.get(base_type(big_type)), _LITERAL_KINDS.get(base_type(small_type))
    if big_kind is None or big_kind != small_kind or (big_kind == "decimal" and big_type != small_type):
        log.skipped(
            f"key types {big_type or '?'} and {small_type or '?'}: only equal integral, decimal, string or date "
            "keys are written as literals",
            **details,
        )
        return None

    stats = estimator.statistics.get(table)
    small_relation = estimator.build_side(scope, small, join)
    if stats is None or stats.row_count.is_absent or small_relation.rows.is_absent:
        log.skipped("statistics absent for the big or the small side: Spark decides", **details)
        return None
    big_bytes = stats.size_bytes if not stats.size_bytes.is_absent else estimator.table(exp.to_table(table)).bytes()
    if big_bytes.is_absent or big_bytes.value < config.prune_min_big_bytes:
        log.skipped(
            f"the big table is small ({_mb(big_bytes.value)} < {_mb(config.prune_min_big_bytes)}): "
            "reading it whole is cheap",
            **details,
        )
        return None
    big_ndv = stats.column(column).ndv
    small_ndv = small_relation.column(f"{small}.{small_key.name}").ndv
    small_ndv = small_ndv.capped(small_relation.rows) if not small_ndv.is_absent else small_relation.rows
    if big_ndv.is_absent or not big_ndv.value:
        log.skipped(f"no distinct-value count for {table}.{column}: Spark decides", **details)
        return None
    fraction = min(1.0, small_ndv.value / big_ndv.value)
    # Filters on the key itself (a range of days) keep that share of its values, which the
    # distinct count after filters (uniform over the other columns) does not show.
    on_key = [p for p in filters if {(c.table, c.name) for c in p.find_all(exp.Column)} == {(small, small_key.name)}]
    if on_key:
        whole, kept = estimator.source(scope, small).rows, estimator.filtered_source(scope, small, on_key).rows
        if not whole.is_absent and not kept.is_absent and whole.value:
            fraction = min(fraction, kept.value / whole.value)
    details.update(key_fraction=round(fraction, 4), big_mb=round(big_bytes.value / 1024 / 1024, 1))
    if fraction > MAX_KEY_FRACTION and not filters:
        log.skipped(
            f"the small side is not filtered and keeps about {fraction:.0%} of the key's values: too little to prune",
            **details,
        )
        return None
    # With filters the estimate (uniform over the other columns) cannot tell which keys they
    # keep: the fetched values decide (see _predicate).
    details.update(big_ndv=round(big_ndv.value))

    small_bytes = small_relation.bytes(f"{small}.{c.name}" for c in scope.columns if c.table == small)
    broadcast = not small_bytes.is_absent and small_bytes.value <= config.broadcast_threshold_bytes
    if column in parts.get(table, []):
        # Measured (bench/pruning.py): Spark's DPP also prunes through an aggregate grouped by the key.
        through = " (through the aggregate too)" if aggregated else ""
        if broadcast:
            log.skipped(
                f"{table} is partitioned on {column} and the small side is broadcast "
                f"({_mb(small_bytes.value)}): Spark's dynamic partition pruning prunes it{through}",
                **details,
            )
            return None
        reason = (
            f"{table} is partitioned on {column} but the small side ({_mb(small_bytes.value)}) stays a "
            "sort-merge join: Spark's DPP does not prune"
        )
    else:
        declared = {str(t).lower(): [str(c).lower() for c in cols] for t, cols in (config.sorted_keys or {}).items()}
        sorted_by_key = column in declared.get(table, [])
        if not sorted_by_key and not aggregated:
            # Measured: on TPC-H's lineitem (not sorted by l_partkey) a 204-value IN-list and its
            # fetch made a star query 2x slower: no row group can be skipped, every row is tested.
            log.skipped(
                f"{table} is not partitioned on {column} nor declared sorted by it (sorted_keys), and not "
                "aggregated before the join: no row group can be skipped by its values, a filter would only "
                "add work; left to Spark",
                **details,
            )
            return None
        reason = f"{table} is not partitioned on {column}: Spark's DPP cannot prune"
        if aggregated:
            # Measured (bench/pruning.py): 30M rows aggregated per customer and day, joined to 900
            # customers: 19 s -> 2.5 s with the filter below the aggregate, sorted or not.
            reason += "; the filter goes below the aggregate, which then reads only the small side's keys"
        if sorted_by_key:
            details.update(sorted_by_key=True)
    small_bytes_keys = small_relation.bytes([f"{small}.{small_key.name}"])
    details.update(small_key_mb=None if small_bytes_keys.is_absent else round(small_bytes_keys.value / 1024 / 1024, 2))
    fetch = _fetch(
        scope,
        small,
        small_key,
        filters,
        with_,
        config,
        broadcast=not small_bytes_keys.is_absent and small_bytes_keys.value <= config.broadcast_threshold_bytes,
    )
    return _Candidate(scope, label, join, big, big_key, table, big_type, small, reason, fetch, details, aggregated)


def _trace(scope: Scope, alias: str, name: str):
    """(`db.table`, column, aggregated) a block's column comes from, through derived tables and
    CTEs that read one relation (a filter on it can be pushed to that table's scan); a string
    saying why not otherwise."""
    aggregated = False
    for _ in range(32):
        source = scope.sources.get(alias)
        if isinstance(source, exp.Table):
            return ".".join(p for p in (source.db, source.name) if p).lower(), name.lower(), aggregated
        if not isinstance(source, Scope) or not isinstance(source.expression, exp.Select):
            return f"{alias} is not a table, a derived table or a CTE over one SELECT"
        inner: exp.Select = source.expression
        if inner.args.get("joins") or inner.args.get("limit") or inner.args.get("offset") or inner.find(exp.Window):
            return f"{alias} has a join, a LIMIT or a window function: the filter would not reach one scan"
        projection = next((p for p in inner.selects if p.alias_or_name.lower() == name.lower()), None)
        target = projection.this if isinstance(projection, exp.Alias) else projection
        if not isinstance(target, exp.Column):
            return f"{alias}.{name} is computed, not a column of the table"
        group = inner.args.get("group")
        if group is not None:
            if not any(
                isinstance(g, exp.Column) and g.table == target.table and g.name == target.name
                for g in group.expressions
            ):
                return f"{alias}.{name} is not a grouping column"
            aggregated = True
        elif inner.find(exp.AggFunc):
            return f"{alias} is a global aggregate"
        scope, alias, name = source, target.table, target.name
    return "too deeply nested"


def _fetch(
    scope: Scope,
    small: str,
    small_key: exp.Column,
    filters: list[exp.Expression],
    with_: exp.With | None,
    config: OptimizerConfig,
    broadcast: bool,
) -> ValueFetch:
    """SELECT DISTINCT key FROM <small side with its own filters> — a superset of the keys that
    reach the join, which is all the rewrite needs. Also the same keys as a subquery for the
    semi-join filter, with a BROADCAST hint when they fit (`broadcast`): Spark sizes the subquery
    from the files, not from the filters, and a sort-merge semi join would shuffle the big side
    before its aggregate."""
    node = _relation_node(scope.expression, small).copy()
    filters = list(filters)
    key = exp.column(small_key.name, table=small)
    filters.append(exp.not_(exp.Is(this=key.copy(), expression=exp.null())))
    base = exp.select(exp.alias_(key.copy(), "k")).from_(node).where(exp.and_(*filters))
    keys_query = None
    if broadcast and _deterministic(node, with_):
        keys_query = base.copy()
        keys_query.set(
            "hint", exp.Hint(expressions=[exp.Anonymous(this="BROADCAST", expressions=[exp.to_identifier(small)])])
        )
    values = base.copy().distinct().limit(config.prune_max_values + 1)
    bounds = base.copy()
    bounds.set(
        "expressions", [exp.alias_(exp.Min(this=key.copy()), "low"), exp.alias_(exp.Max(this=key.copy()), "high")]
    )
    identity = values.copy()
    for hint in list(identity.find_all(exp.Hint)):
        hint.pop()
    if with_ is not None:
        values.set("with_", with_.copy())
        bounds.set("with_", with_.copy())
    return ValueFetch(identity.sql(DIALECT), values, bounds, small, keys_query)


def _deterministic(node: exp.Expression, with_: exp.With | None) -> bool:
    """No non-deterministic function in the small side (nor in the CTE it names): a copy of it in
    a semi-join filter must return the rows the join reads."""
    bodies = [node]
    if with_ is not None and isinstance(node, exp.Table) and not node.db:
        bodies += [cte.this for cte in with_.expressions if cte.alias_or_name == node.name]
    return all(deterministic(body) for body in bodies)


def _local(predicate: exp.Expression, alias: str) -> bool:
    return aliases_of(predicate) == {alias} and predicate.find(exp.Query) is None and deterministic(predicate)


def _relation_node(select: exp.Select, alias: str) -> exp.Expression | None:
    for node in [select.args["from_"].this, *(j.this for j in select.args.get("joins") or [])]:
        if node.alias_or_name == alias and nested_join(node) is None:
            return node
    return None


# -- the predicate --------------------------------------------------------------------------------


def _predicate(candidate: _Candidate, fetched: FetchedValues, statistics, config: OptimizerConfig):
    """(predicate, kind, None) to inject, or (None, None, why not)."""
    kind = _LITERAL_KINDS[base_type(candidate.big_type)]
    key = exp.column(candidate.big_key.name, table=candidate.big_alias)
    if fetched.values is not None and len([v for v in fetched.values if v is not None]) <= config.prune_max_values:
        values = sorted({v for v in fetched.values if v is not None}, key=_sort_key)
        if not values:
            # No key on the small side: no big-side row can match (inner, semi, or the
            # null-supplying side of a LEFT join, which then holds NULLs only).
            return exp.false(), "FALSE (the small side holds no key)", None
        share = len(values) / candidate.details["big_ndv"]
        if share > MAX_KEY_FRACTION:
            return (
                None,
                None,
                (
                    f"the small side holds {len(values)} key values, about {min(share, 1):.0%} of the key's "
                    f"{candidate.details['big_ndv']} distinct values: too little to prune"
                ),
            )
        literals = [_literal(v, kind, candidate.big_type) for v in values]
        if any(lit is None for lit in literals):
            return None, None, f"a fetched value does not fit the key's type ({kind}): left to Spark"
        return exp.In(this=key, expressions=literals), f"an IN-list of {len(values)} values", None
    low, high = _literal(fetched.low, kind, candidate.big_type), _literal(fetched.high, kind, candidate.big_type)
    if fetched.low is None or low is None or high is None:
        return _semi_join(candidate, "more values than the list bound and no usable min/max")
    column = statistics.get(candidate.big_table).column(candidate.details["big_column"])
    covered = _range_fraction(fetched.low, fetched.high, column.min, column.max)
    if covered is None or covered > MAX_RANGE_FRACTION:
        share = "unknown" if covered is None else f"{covered:.0%}"
        return _semi_join(
            candidate,
            f"more than {config.prune_max_values} values and their range covers {share} of "
            "the key's min..max: a range prunes too little",
        )
    return (
        exp.Between(this=key, low=low, high=high),
        f"a range (more than {config.prune_max_values} values; {covered:.0%} of the key's min..max)",
        None,
    )


def _semi_join(candidate: _Candidate, why: str):
    """`key IN (SELECT /*+ BROADCAST(small) */ small.key FROM small WHERE its filters)` where no
    literals can be written (values not fetched: no session, a timeout; too many for a list or a
    range), or (None, None, why not). Measured (bench/pruning.py, 30M-row fact): below an
    aggregate by the key it wins (19 s -> 1.6 s sorted, 2.5 s unsorted), as the aggregate reads
    only matching rows; where the big side is read as is it lost (0.77-0.94x): the join already
    filters it, Spark's DPP needs a broadcast join and the Parquet reader needs literals."""
    if not candidate.aggregated:
        return (
            None,
            None,
            (
                f"{why}; a semi-join filter is no faster where the big side is read as is (measured "
                "0.77-0.94x: the join already filters it); left to Spark"
            ),
        )
    if candidate.fetch.keys_query is None:
        return (
            None,
            None,
            (
                f"{why}; the small side's keys are not known to fit a broadcast, or it reads a "
                "non-deterministic expression: no semi-join filter; left to Spark"
            ),
        )
    key = exp.column(candidate.big_key.name, table=candidate.big_alias)
    return (
        exp.In(this=key, query=exp.Subquery(this=candidate.fetch.keys_query.copy())),
        f"a semi-join filter below the aggregate ({why})",
        None,
    )


def _literal(value: Any, kind: str, data_type: str) -> exp.Expression | None:
    """An AST literal of the key's type (literals.literal_for), only for a fetched value whose
    Python type is the key's own: a value of another type is never coerced into the list."""
    if value is None or isinstance(value, bool):
        return None
    fits = {
        "integral": isinstance(value, int),
        "decimal": isinstance(value, int) or (isinstance(value, decimal.Decimal) and value.is_finite()),
        "string": isinstance(value, str),
        "date": isinstance(value, datetime.date) and not isinstance(value, datetime.datetime),
    }
    return literal_for(value, data_type) if fits.get(kind) else None


def _sort_key(value: Any):
    return (type(value).__name__, value)


def _ordinal(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float, decimal.Decimal)):
        return float(value)
    if isinstance(value, datetime.date):
        return float(value.toordinal())
    if isinstance(value, str):
        try:
            return float(datetime.date.fromisoformat(value[:10]).toordinal())
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return None
    return None


def _range_fraction(low: Any, high: Any, col_min: Any, col_max: Any) -> float | None:
    points = [_ordinal(v) for v in (low, high, col_min, col_max)]
    if any(p is None for p in points):
        return None
    lo, hi, cmin, cmax = points
    if cmax <= cmin:
        return None
    return max(0.0, min(1.0, (hi - lo) / (cmax - cmin)))


def _mb(value: float | None) -> str:
    return "unknown" if value is None else f"{value / 1024 / 1024:.1f} MB"
