"""Detection for partition pruning (rules/prune_partitions_from_small_side.py): the joins whose big
side a small side's key values can filter, where Spark's own dynamic partition pruning does not.
Each join key pair is analysed to a PruneCandidate (with the query that fetches the small side's
keys) or to a Skip that says why not.

>>> from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
>>> from dbt.adapters.hiveopt.optimizer.estimator import Estimator
>>> from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
>>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
>>> schema = {"db": {"f": {"k": "int", "v": "double"}, "d": {"k": "int", "c": "string"}}}
>>> stats = StatsCatalog.from_dict({
...     "db.f": {"row_count": 10**8, "size_bytes": 2 * 10**9, "columns": {"k": {"ndv": 10**6}}},
...     "db.d": {"row_count": 10**6, "columns": {"k": {"ndv": 10**6}, "c": {"ndv": 1000}}}})
>>> expression = prepare_query("SELECT f.v, d.c FROM db.f JOIN db.d ON f.k = d.k WHERE d.c = 'x'", schema).expression
>>> config = OptimizerConfig(sorted_keys={"db.f": ["k"]})
>>> candidate, skip = find_candidates(expression, Estimator(expression, schema, stats), config, {})
>>> candidate.big_table, candidate.reason, candidate.sorted_by_key
('db.f', "db.f is not partitioned on k: Spark's DPP cannot prune", True)
>>> skip.reason, skip.details["big"]
('d.k (db.d) by the values of f.k (db.f): db.d is small (30.5 MB < 64.0 MB), reading it whole is cheap', 'd')
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.blocks import block_label
from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.context import ValueFetch
from dbt.adapters.hiveopt.optimizer.cost_model import columns_read
from dbt.adapters.hiveopt.optimizer.decisions import Skip
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.fetched_literals import literal_kind
from dbt.adapters.hiveopt.optimizer.human import human_bytes
from dbt.adapters.hiveopt.optimizer.prunable_joins import KeySource, relation_node, small_filters, trace, unprunable
from dbt.adapters.hiveopt.optimizer.relation_estimates import RelationEstimate
from dbt.adapters.hiveopt.optimizer.small_side_fetch import small_side_deterministic, value_fetch
from dbt.adapters.hiveopt.optimizer.syntax import NOT_DETERMINISTIC, column_label, conjuncts, equi_pair, nested_join

# The small side must keep at most this fraction of the big key's distinct values (estimated):
# above it the filter prunes too little to pay for the fetch.
MAX_KEY_FRACTION = 0.5


@dataclass(frozen=True)
class PruneCandidate:
    """A big side to filter by a small side's key values, and the query that fetches them."""

    scope: Scope
    big_alias: str
    big_key: exp.Column
    big_table: str
    big_column: str
    big_type: str
    big_ndv: int
    small_alias: str
    reason: str  # why Spark does not prune it itself, for the record
    fetch: ValueFetch
    details: dict[str, Any]  # for the decision record
    aggregated: bool = False  # an aggregate grouped by the key stands between the join and the table
    sorted_by_key: bool = False  # declared sorted by the key (sorted_keys): row groups can be skipped


@dataclass(frozen=True)
class _Query:
    """What the analyses of one query share."""

    estimator: Estimator
    config: OptimizerConfig
    types: dict[str, dict[str, str]]  # `db.table` -> column -> Spark type
    partitions: dict[str, list[str]]  # `db.table` -> partition columns, lower case
    with_: exp.With | None


@dataclass(frozen=True)
class _Sizes:
    small_relation: RelationEstimate
    big_bytes: float
    big_ndv: float
    fraction: float  # estimated share of the big key's distinct values the small side keeps


@dataclass(frozen=True)
class _Motive:
    reason: str  # why Spark does not prune the big side itself
    sorted_by_key: bool = False


def find_candidates(
    expression: exp.Expression,
    estimator: Estimator,
    config: OptimizerConfig,
    partitioning: dict[str, list[str]],
) -> Iterator[PruneCandidate | Skip]:
    """Each join key pair of each block, both ways round, analysed: a candidate or a Skip."""
    query = _Query(
        estimator,
        config,
        types={f"{db}.{t}": cols for db, ts in estimator.schema.items() for t, cols in ts.items()},
        partitions={name.lower(): [c.lower() for c in cols] for name, cols in (partitioning or {}).items()},
        with_=expression.args.get("with_"),
    )
    for scope in estimator.scopes.values():
        select = scope.expression
        if isinstance(select, exp.Select) and select.args.get("joins"):
            yield from _block_candidates(scope, query)


def _block_candidates(scope: Scope, query: _Query) -> Iterator[PruneCandidate | Skip]:
    select = scope.expression
    label = block_label(scope)
    joins: list[exp.Join] = select.args["joins"]
    where_ok = not ({(j.side or "").upper() for j in joins} & {"RIGHT", "FULL"})
    first = select.args["from_"].this
    for join in joins:
        if nested_join(join.this) is not None or nested_join(first) is not None:
            yield Skip("a nested join: its relations are not pruned one by one", block=label)
            continue
        for big_key, small_key in _oriented_pairs(join):
            subject = (
                f"{column_label(scope, big_key.table, big_key.name)} by the values of "
                f"{column_label(scope, small_key.table, small_key.name)}"
            )
            skip = unprunable(joins, join, big_key.table, small_key.table, label)
            if skip is not None:
                yield skip.about(subject)
                continue
            filters = small_filters(select, join, small_key.table, where_ok)
            found = _candidate(scope, label, join, big_key, small_key, filters, query)
            yield found.about(subject) if isinstance(found, Skip) else found


def _oriented_pairs(join: exp.Join) -> Iterator[tuple[exp.Column, exp.Column]]:
    """(big key, small key) for each equi-join pair of the join's ON, both ways round, that reads
    the join's own relation (not a condition between two earlier relations)."""
    right = join.this.alias_or_name
    for pair in filter(None, (equi_pair(p) for p in conjuncts(join.args.get("on")))):
        for big_key, small_key in (pair, pair[::-1]):
            if right in (big_key.table, small_key.table):
                yield big_key, small_key


def _candidate(
    scope: Scope,
    label: str,
    join: exp.Join,
    big_key: exp.Column,
    small_key: exp.Column,
    filters: list[exp.Expression],
    query: _Query,
) -> PruneCandidate | Skip:
    big, small = big_key.table, small_key.table
    details: dict[str, Any] = dict(block=label, big=big, key=big_key.name, small=small)
    small_node = relation_node(scope.expression, small)
    if small_node is not None and not small_side_deterministic(small_node, query.with_):
        # Its keys fetched apart would be other rows than the join's (a 10% rand() sample: 19-25
        # groups as written, 1-3 behind the fetched IN-list).
        return Skip(
            f"the small side is not deterministic ({NOT_DETERMINISTIC}): its keys fetched apart are not the "
            "rows the join reads; left to Spark",
            **details,
        )
    source = trace(scope, big, big_key.name)
    if isinstance(source, Skip):
        return Skip(f"big side key: {source.reason}", **details)
    details.update(big_table=source.table, big_column=source.column)
    big_type = _key_type(scope, big, small_key, source, query.types, details)
    if isinstance(big_type, Skip):
        return big_type
    sizes = _sizes(scope, join, small_key, source, filters, query, details)
    if isinstance(sizes, Skip):
        return sizes
    details.update(key_fraction=round(sizes.fraction, 4), big_mb=round(sizes.big_bytes / 1024 / 1024, 1))
    if sizes.fraction > MAX_KEY_FRACTION and not filters:
        return Skip(
            f"the small side is not filtered and keeps about {sizes.fraction:.0%} of the key's values: too little "
            "to prune",
            **details,
        )
    # With filters the estimate (uniform over the other columns) cannot tell which keys they
    # keep: the fetched values decide (see pruning_predicates).
    details.update(big_ndv=round(sizes.big_ndv))
    motive = _motive(scope, small, source, sizes.small_relation, query, details)
    if isinstance(motive, Skip):
        return motive
    if motive.sorted_by_key:
        details.update(sorted_by_key=True)
    key_bytes = sizes.small_relation.bytes([f"{small}.{small_key.name}"])
    details.update(small_key_mb=None if key_bytes.is_absent else round(key_bytes.value / 1024 / 1024, 2))
    broadcast = not key_bytes.is_absent and key_bytes.value <= query.config.broadcast_threshold_bytes
    return PruneCandidate(
        scope=scope,
        big_alias=big,
        big_key=big_key,
        big_table=source.table,
        big_column=source.column,
        big_type=big_type,
        big_ndv=round(sizes.big_ndv),
        small_alias=small,
        reason=motive.reason,
        fetch=value_fetch(scope, small, small_key, filters, query.with_, query.config, broadcast),
        details=details,
        aggregated=source.aggregated,
        sorted_by_key=motive.sorted_by_key,
    )


def _key_type(
    scope: Scope,
    big: str,
    small_key: exp.Column,
    source: KeySource,
    types: dict[str, dict[str, str]],
    details: dict[str, Any],
) -> str | Skip:
    """The big key's type, when the small key is a table column too, both sides are relations of
    the block, and both keys are written as literals of one type; else a Skip."""
    small_source = trace(scope, small_key.table, small_key.name)
    if isinstance(small_source, Skip):
        return Skip(f"small side key: {small_source.reason}", **details)
    for side, alias in (("big", big), ("small", small_key.table)):
        # A side inside a parenthesized join (reorder_joins writes them) has no node of its own
        # in the block to wrap or to read its filters from (fuzz case 5633).
        if relation_node(scope.expression, alias) is None:
            return Skip(
                f"the {side} side is not a relation of the block's FROM or JOIN (it sits in a parenthesized join)",
                **details,
            )
    big_type = types.get(source.table, {}).get(source.column, "")
    small_type = types.get(small_source.table, {}).get(small_source.column, "")
    big_kind, small_kind = literal_kind(big_type), literal_kind(small_type)
    if big_kind is None or big_kind != small_kind or (big_kind == "decimal" and big_type != small_type):
        return Skip(
            f"key types {big_type or '?'} and {small_type or '?'}: only equal integral, decimal, string or date "
            "keys are written as literals",
            **details,
        )
    return big_type


def _sizes(
    scope: Scope,
    join: exp.Join,
    small_key: exp.Column,
    source: KeySource,
    filters: list[exp.Expression],
    query: _Query,
    details: dict[str, Any],
) -> _Sizes | Skip:
    """The big table's bytes and distinct keys, and the share of those the small side keeps
    (estimated); a Skip when statistics are absent or the big table is cheap to read whole."""
    estimator, config, small = query.estimator, query.config, small_key.table
    stats = estimator.statistics.get(source.table)
    small_relation = estimator.build_side(scope, small, join)
    if stats is None or stats.row_count.is_absent or small_relation.rows.is_absent:
        return Skip("statistics absent for the big or the small side: Spark decides", **details)
    big_bytes = (
        stats.size_bytes if not stats.size_bytes.is_absent else estimator.table(exp.to_table(source.table)).bytes()
    )
    if big_bytes.is_absent or big_bytes.value < config.prune_min_big_bytes:
        return Skip(
            f"{source.table} is small ({human_bytes(big_bytes.value)} < {human_bytes(config.prune_min_big_bytes)}), "
            "reading it whole is cheap",
            **details,
        )
    big_ndv = stats.column(source.column).ndv
    small_ndv = small_relation.column(f"{small}.{small_key.name}").ndv
    small_ndv = small_ndv.capped(small_relation.rows) if not small_ndv.is_absent else small_relation.rows
    if big_ndv.is_absent or not big_ndv.value:
        return Skip(f"no distinct-value count for {source.table}.{source.column}: Spark decides", **details)
    fraction = min(1.0, small_ndv.value / big_ndv.value)
    kept = _kept_by_key_filters(scope, small_key, filters, estimator)
    if kept is not None:
        fraction = min(fraction, kept)
    return _Sizes(small_relation, big_bytes.value, big_ndv.value, fraction)


def _kept_by_key_filters(
    scope: Scope, small_key: exp.Column, filters: list[exp.Expression], estimator: Estimator
) -> float | None:
    """The share of the small side's rows kept by its filters on the key itself (a range of days
    keeps that share of its values, which the distinct count after filters, uniform over the other
    columns, does not show); None without such filters or without estimates."""
    small = small_key.table
    on_key = [p for p in filters if {(c.table, c.name) for c in p.find_all(exp.Column)} == {(small, small_key.name)}]
    if not on_key:
        return None
    whole, kept = estimator.source(scope, small).rows, estimator.filtered_source(scope, small, on_key).rows
    if whole.is_absent or kept.is_absent or not whole.value:
        return None
    return kept.value / whole.value


def _motive(
    scope: Scope,
    small: str,
    source: KeySource,
    small_relation: RelationEstimate,
    query: _Query,
    details: dict[str, Any],
) -> _Motive | Skip:
    """Why Spark does not prune this big side itself, or a Skip: it does (a partitioned table and
    a broadcast small side), or a filter would skip no row group (not partitioned, not sorted by
    the key, and no aggregate before the join)."""
    table, column = source.table, source.column
    if column in query.partitions.get(table, []):
        return _partitioned_motive(scope, small, source, small_relation, query.config, details)
    declared = {str(t).lower(): [str(c).lower() for c in cols] for t, cols in (query.config.sorted_keys or {}).items()}
    sorted_by_key = column in declared.get(table, [])
    if not sorted_by_key and not source.aggregated:
        # Measured: on TPC-H's lineitem (not sorted by l_partkey) a 204-value IN-list and its
        # fetch made a star query 2x slower: no row group can be skipped, every row is tested.
        return Skip(
            f"{table} is not partitioned on {column} nor declared sorted by it (sorted_keys), and not "
            "aggregated before the join: no row group can be skipped by its values, a filter would only "
            "add work; left to Spark",
            **details,
        )
    reason = f"{table} is not partitioned on {column}: Spark's DPP cannot prune"
    if source.aggregated:
        # Measured (bench/pruning.py): 30M rows aggregated per customer and day, joined to 900
        # customers: 19 s -> 2.5 s with the filter below the aggregate, sorted or not.
        reason += "; the filter goes below the aggregate, which then reads only the small side's keys"
    return _Motive(reason, sorted_by_key)


def _partitioned_motive(
    scope: Scope,
    small: str,
    source: KeySource,
    small_relation: RelationEstimate,
    config: OptimizerConfig,
    details: dict[str, Any],
) -> _Motive | Skip:
    """A table partitioned on the key: Spark's DPP prunes it when the small side is broadcast."""
    small_bytes = small_relation.bytes(columns_read(scope, [small], qualified=True))
    # Measured (bench/pruning.py): Spark's DPP also prunes through an aggregate grouped by the key.
    through = " (through the aggregate too)" if source.aggregated else ""
    if not small_bytes.is_absent and small_bytes.value <= config.broadcast_threshold_bytes:
        return Skip(
            f"{source.table} is partitioned on {source.column} and the small side is broadcast "
            f"({human_bytes(small_bytes.value)}): Spark's dynamic partition pruning prunes it{through}",
            **details,
        )
    return _Motive(
        f"{source.table} is partitioned on {source.column} but the small side "
        f"({human_bytes(small_bytes.value)}) stays a sort-merge join: Spark's DPP does not prune"
    )
