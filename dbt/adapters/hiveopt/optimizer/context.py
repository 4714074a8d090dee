"""What the optimizer is given (OptimizerContext) and what it returns (OptimizedQuery).

>>> ctx = OptimizerContext(schema={"db": {"t": {"a": "int"}}})
>>> ctx.config.enabled, ctx.statistics.names()
(True, [])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.decisions import RuleRun
from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog


@dataclass(frozen=True)
class ValueFetch:
    """One small side's key values to fetch before the rules: `values_query` returns at most
    max_values + 1 distinct non-NULL keys; `range_query` their min and max (run when the list is
    too long). `key` finds the fetched values again from the rule."""

    key: str
    values_query: exp.Select
    range_query: exp.Select
    small: str  # the small side's alias, for the record
    # The small side's non-NULL keys as a subquery of the block (no DISTINCT, no LIMIT): the
    # semi-join filter when the values cannot be fetched or listed. None when they are not known
    # to fit a broadcast (a small side that is not deterministic gets no ValueFetch at all).
    keys_query: exp.Select | None = None


@dataclass
class FetchedValues:
    """What the adapter's pre-pass fetched for one small side (partition pruning): its distinct
    non-NULL key values, or when there were more than the bound only their min and max, or the
    error (timeout, failure) that stopped the fetch."""

    values: list[Any] | None = None
    low: Any = None
    high: Any = None
    error: str | None = None
    seconds: float = 0.0


@dataclass
class OptimizerContext:
    # {db: {table: {column: spark type}}}, from the catalog.
    schema: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    statistics: StatsCatalog = field(default_factory=StatsCatalog)
    config: OptimizerConfig = field(default_factory=OptimizerConfig)
    model: str = "<query>"
    # "table", "incremental", "view", ...: rules that depend on today's data skip views.
    materialization: str = "table"
    default_db: str | None = None
    # `db.table` -> its bucket columns, for tables bucketed in the catalog (no shuffle on them).
    bucketing: dict[str, list[str]] = field(default_factory=dict)
    # `db.table` -> its partition columns, from the catalog.
    partitioning: dict[str, list[str]] = field(default_factory=dict)
    # Small-side key values fetched before the rules, by ValueFetch.key (partition pruning).
    fetched_values: dict[str, FetchedValues] = field(default_factory=dict)
    # `db.view` (lowercase) of the views the query reads whose definition is not deterministic
    # (rand(), an unseeded TABLESAMPLE, a LIMIT, ...; from the catalog's view text): the rules neither
    # read them a different number of times nor fetch from them (syntax.mark_volatile).
    volatile_relations: frozenset[str] = frozenset()
    # Spark's names for the query's output columns (the adapter's DESCRIBE QUERY), asked only
    # when a rule rewrote a query with an output expression without an alias (None: not asked).
    spark_output_names: Callable[[], Sequence[str] | None] | None = None


@dataclass
class OptimizedQuery:
    sql: str
    original_sql: str
    changed: bool = False
    fallback_reason: str | None = None
    # The configuration switched the optimizer or every rule off: a choice, not a failure.
    switched_off: bool = False
    # Why a query the optimizer did not fail on is unchanged, when known before any rule ran.
    unchanged_reason: str | None = None
    rules: list[RuleRun] = field(default_factory=list)
    estimates: dict[str, Any] = field(default_factory=dict)
    statistics_used: dict[str, Any] = field(default_factory=dict)
    # {"written": {block: tree}, "chosen": ...}: see join_trees.py.
    join_trees: dict[str, Any] = field(default_factory=dict)
    elapsed_ms: float = 0.0

    @property
    def fired_rules(self) -> list[str]:
        return [r.rule for r in self.rules if r.fired]

    @property
    def warnings(self) -> list[str]:
        """Values from settings or statistics that the rules refused (see literals.typed_value)."""
        return [w for r in self.rules for w in r.warnings]

    def to_dict(self) -> dict[str, Any]:
        return {
            "changed": self.changed,
            "fallback_reason": self.fallback_reason,
            "unchanged_reason": self.unchanged_reason,
            "fired_rules": self.fired_rules,
            "warnings": self.warnings,
            "optimizer_ms": round(self.elapsed_ms, 3),
            "rules": [r.to_dict() for r in self.rules],
            "estimates": self.estimates,
            "statistics_used": self.statistics_used,
            "join_trees": self.join_trees,
            "original_sql": self.original_sql,
            "optimized_sql": self.sql,
        }
