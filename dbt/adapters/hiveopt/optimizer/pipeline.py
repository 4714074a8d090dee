"""The optimizer pipeline: parse and qualify, run the rules in order, check invariants after
each, generate Spark SQL. Any failure returns the original SQL with the reason.

>>> from dbt.adapters.hiveopt.optimizer.context import OptimizerContext
>>> optimize("SELECT 1 AS one", OptimizerContext()).changed
False
>>> optimize("SELECT FROM WHERE", OptimizerContext()).fallback_reason.startswith("cannot parse")
True
"""

from __future__ import annotations

import inspect
import time
from typing import Callable, Tuple

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from dbt.adapters.hiveopt.optimizer.blocks import block_label
from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.context import OptimizedQuery, OptimizerContext
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog, RuleRun
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.invariants import check_invariants, generate_checked
from dbt.adapters.hiveopt.optimizer.prepare import UnsupportedQuery, prepare_query
from dbt.adapters.hiveopt.optimizer.rules.prune_partitions_from_small_side import prune_partitions_from_small_side
from dbt.adapters.hiveopt.optimizer.rules.reorder_joins import reorder_joins
from dbt.adapters.hiveopt.optimizer.rules.select_join_algorithms import select_join_algorithms

Rule = Callable[..., exp.Expression]

# The rules, in order. Each line says why it stands where it does. Qualification (resolving
# every column to its relation) runs before all of them in prepare_query.
RULES: Tuple[Tuple[str, Rule], ...] = (
    # Before the algorithm choice: which joins exist, and in what order, decides what is a build side.
    ("reorder_joins", reorder_joins),
    # Last of the join rules: it sizes the build sides of the tree as the earlier rules leave it.
    ("select_join_algorithms", select_join_algorithms),
    # After the algorithm choice: it leaves to Spark's DPP the joins Spark broadcasts, and wraps
    # the big side only once the join order and hints are settled.
    ("prune_partitions_from_small_side", prune_partitions_from_small_side),
)

RULE_NAMES = tuple(name for name, _ in RULES)

# Rules that cannot both be on (Hive turns the correlation optimizer off when compile-time skew
# join is on): {rule: rules it switches off}. None yet with a single rule.
CONFLICTS: dict = {}


def needs_statistics(expression: exp.Expression, config: OptimizerConfig) -> bool:
    """Whether an enabled rule could use statistics for this query: every rule works on joins,
    so a query without one, or with every rule off, costs no statistics I/O.

    >>> import sqlglot
    >>> cfg = OptimizerConfig()
    >>> needs_statistics(sqlglot.parse_one("SELECT a FROM t"), cfg), needs_statistics(sqlglot.parse_one("SELECT a FROM t JOIN u ON t.k = u.k"), cfg)
    (False, True)
    """
    return any(config.rule_enabled(name) for name in RULE_NAMES) and expression.find(exp.Join) is not None


def _arguments(rule: Rule, available: dict) -> dict:
    """Pass a rule only the arguments it asks for (sqlglot's optimize() does the same)."""
    wanted = inspect.signature(rule).parameters
    return {name: value for name, value in available.items() if name in wanted}


def _block_estimates(expression: exp.Expression, context: OptimizerContext) -> Tuple[dict, dict]:
    estimator = Estimator(expression, context.schema, context.statistics)
    blocks = {}
    for i, scope in enumerate(traverse_scope(expression)):
        label = block_label(scope)
        blocks[label if label not in blocks else f"{label} #{i}"] = estimator.estimate(scope.expression).rows.to_dict()
    return blocks, estimator.used


def optimize(sql: str, context: OptimizerContext) -> OptimizedQuery:
    started = time.perf_counter()
    result = OptimizedQuery(sql=sql, original_sql=sql)

    def finish(reason=None) -> OptimizedQuery:
        result.fallback_reason = reason
        if reason is not None:
            result.sql, result.changed = sql, False
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        return result

    if not any(context.config.rule_enabled(name) for name in RULE_NAMES):
        result.switched_off = True
        result.rules = [RuleRun(rule=name, enabled=False) for name in RULE_NAMES]
        return finish("optimizer switched off" if not context.config.enabled else "every rule switched off")
    try:
        prepared = prepare_query(sql, context.schema, context.default_db)
    except UnsupportedQuery as error:
        return finish(str(error))
    except Exception as error:  # sqlglot internals: never let them fail a dbt run
        return finish(f"cannot prepare the query: {type(error).__name__}: {error}")

    expression = prepared.expression
    disabled = {off for rule, offs in CONFLICTS.items() if context.config.rule_enabled(rule) for off in offs}
    for name, rule in RULES:
        enabled = context.config.rule_enabled(name) and name not in disabled
        run = RuleRun(rule=name, enabled=enabled)
        result.rules.append(run)
        if not enabled:
            continue
        log = DecisionLog(name)
        available = dict(
            schema=context.schema, statistics=context.statistics, config=context.config,
            materialization=context.materialization, bucketing=context.bucketing, log=log,
            partitioning=context.partitioning, fetched_values=context.fetched_values,
        )
        rule_started = time.perf_counter()
        try:
            candidate = rule(expression.copy(), **_arguments(rule, available))
            check_invariants(candidate, prepared.output_names)
        except Exception as error:
            run.error = f"{type(error).__name__}: {error}"
            run.elapsed_ms = (time.perf_counter() - rule_started) * 1000
            return finish(f"rule {name} failed: {run.error}")
        run.elapsed_ms = (time.perf_counter() - rule_started) * 1000
        run.decisions = log.decisions
        if run.fired:
            expression = candidate

    try:
        result.estimates, result.statistics_used = _block_estimates(expression, context)
    except Exception as error:  # the report is best effort; the query is not affected
        result.estimates = {"error": f"{type(error).__name__}: {error}"}
    if any(r.fired for r in result.rules):
        # Only a query a rule changed is regenerated; otherwise Spark runs the text as written.
        try:
            result.sql, result.changed = generate_checked(expression), True
        except Exception as error:
            return finish(f"generated SQL failed its check: {error}")
    return finish()
