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

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.context import FetchedValues, ValueFetch
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog, Skip
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.prunable_joins import relation_node
from dbt.adapters.hiveopt.optimizer.prune_candidates import PruneCandidate, find_candidates
from dbt.adapters.hiveopt.optimizer.pruning_predicates import PrunePredicate, pruning_predicate

# Builds that run now; anything else (views, ephemeral) is a stored or inlined definition.
BUILDS_THAT_RUN_NOW = ("table", "incremental")

_SORTED_NOTE = " (the table is sorted by the key: the Parquet reader skips row groups by min/max)"


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
    for found in find_candidates(expression, estimator, config, partitioning):
        if isinstance(found, PruneCandidate):
            fetches.setdefault(found.fetch.key, found.fetch)
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
    >>> from dbt.adapters.hiveopt.optimizer.context import FetchedValues
    >>> from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog
    >>> from dbt.adapters.hiveopt.optimizer.estimator import Estimator
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
    # Detect every candidate first (recording why each other join is not one), then rewrite.
    found = list(find_candidates(expression, estimator, config, partitioning))
    for skip in (f for f in found if isinstance(f, Skip)):
        skip.record_in(log)
    candidates = [f for f in found if isinstance(f, PruneCandidate)]
    for node, alias, predicates in _predicates_by_relation(candidates, fetched_values, estimator, config, log):
        _wrap(node, alias, predicates)
    return expression


def _predicates_by_relation(
    candidates: list[PruneCandidate],
    fetched_values: dict[str, FetchedValues],
    estimator: Estimator,
    config: OptimizerConfig,
    log: DecisionLog,
) -> list[tuple[exp.Expression, str, list[exp.Expression]]]:
    """(relation node, its alias, the predicates to filter it by), recording each candidate's
    decision: one derived table per relation even when several joins prune it."""
    wraps: dict[int, tuple[exp.Expression, str, list[exp.Expression]]] = {}
    for candidate in candidates:
        fetched = fetched_values.get(candidate.fetch.key)
        chosen = pruning_predicate(candidate, fetched, estimator.statistics, config)
        if isinstance(chosen, Skip):
            chosen.record_in(log, **candidate.details)
            continue
        node = relation_node(candidate.scope.expression, candidate.big_alias)
        if node is None:
            log.skipped("the big side is not a relation of the block's FROM or JOIN", **candidate.details)
            continue
        wraps.setdefault(id(node), (node, candidate.big_alias, []))[2].append(chosen.predicate)
        log.fired(
            _fired_reason(candidate, chosen),
            predicate=chosen.predicate.sql(DIALECT)[:200],
            fetch_seconds=round(fetched.seconds, 3) if fetched else 0.0,
            **candidate.details,
        )
    return list(wraps.values())


def _fired_reason(candidate: PruneCandidate, chosen: PrunePredicate) -> str:
    sorted_note = _SORTED_NOTE if candidate.sorted_by_key and not chosen.is_semi_join else ""
    return f"{candidate.reason}; injected {chosen.description}{sorted_note}"


def _wrap(node: exp.Expression, alias: str, predicates: list[exp.Expression]) -> None:
    """Replace the relation `node` by `(SELECT * FROM node WHERE predicates) AS alias`."""
    inner = node.copy()
    wrapped = exp.select(exp.Star()).from_(inner).where(exp.and_(*predicates))
    node.replace(exp.Subquery(this=wrapped, alias=exp.TableAlias(this=exp.to_identifier(alias))))
