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
from collections.abc import Callable

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from dbt.adapters.hiveopt.optimizer.blocks import block_label
from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.context import OptimizedQuery, OptimizerContext
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog, RuleRun
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.invariants import check_invariants, generate_checked
from dbt.adapters.hiveopt.optimizer.prepare import PreparedQuery, UnsupportedQuery, prepare_query
from dbt.adapters.hiveopt.optimizer.rules.merge_correlated_aggregates import merge_correlated_aggregates
from dbt.adapters.hiveopt.optimizer.rules.merge_sibling_aggregates import merge_sibling_aggregates
from dbt.adapters.hiveopt.optimizer.rules.prune_partitions_from_small_side import prune_partitions_from_small_side
from dbt.adapters.hiveopt.optimizer.rules.reorder_joins import reorder_joins
from dbt.adapters.hiveopt.optimizer.rules.reuse_repeated_subqueries import reuse_repeated_subqueries
from dbt.adapters.hiveopt.optimizer.rules.rewrite_skew_joins import rewrite_skew_joins
from dbt.adapters.hiveopt.optimizer.rules.select_join_algorithms import select_join_algorithms

Rule = Callable[..., exp.Expression]

# The rules, in order. Each line says why it stands where it does. Qualification (resolving
# every column to its relation) runs before all of them in prepare_query.
RULES: tuple[tuple[str, Rule], ...] = (
    # First: it removes a relation (or a subquery) from a block, so the join rules after it plan
    # the block that will actually run, not the one that reads the input twice.
    ("merge_correlated_aggregates", merge_correlated_aggregates),
    # Also before the join rules, for the same reason: siblings merged leave one relation where
    # there were several. Independent of the rule above (it merges aggregate with aggregate, the
    # one above aggregate with rows), so their order between themselves does not matter.
    ("merge_sibling_aggregates", merge_sibling_aggregates),
    # After the merges, which remove the repetitions they can: records what is still read twice
    # and why it is left to Spark's exchange reuse (it rewrites nothing, by measurement).
    ("reuse_repeated_subqueries", reuse_repeated_subqueries),
    # Before the algorithm choice: which joins exist, and in what order, decides what is a build side.
    ("reorder_joins", reorder_joins),
    # After the order is fixed (it splits the block's first join), before the algorithm choice:
    # its hot-key branch carries its own BROADCAST hint, and the broadcast rule then sizes the
    # rest of the split join and the joins above it like any other.
    ("rewrite_skew_joins", rewrite_skew_joins),
    # Last of the join rules: it sizes the build sides of the tree as the earlier rules leave it.
    ("select_join_algorithms", select_join_algorithms),
    # After the algorithm choice: it leaves to Spark's DPP the joins Spark broadcasts, and wraps
    # the big side only once the join order and hints are settled.
    ("prune_partitions_from_small_side", prune_partitions_from_small_side),
)

RULE_NAMES = tuple(name for name, _ in RULES)

# Rules that must not both rewrite one query: {rule: rules it switches off once it has fired}.
# Hive turns its correlation optimizer off when compile-time skew join is on: a skew rewrite splits
# a join by key into a UNION ALL, a correlation merge reads an input once by the same key, and
# each one's cost was computed for the query without the other. Here both are on, and whichever
# fires first on a query (the correlation rules stand first) keeps it: the skew rule then skips
# that query and records why.
CORRELATION_RULES = ("merge_correlated_aggregates", "merge_sibling_aggregates")
CONFLICTS: dict = {rule: ("rewrite_skew_joins",) for rule in CORRELATION_RULES}

# A view is a stored definition: Spark plans it each time it is read, and the models that read
# it are planned through it, on the data as it is then. Choices made from today's sizes and values
# (a join algorithm, hot keys, partition values) are not written into it: a BROADCAST fixed while a
# table was small stays when it has grown. The logical rewrites (join order, merged work) hold.
STORED_DEFINITIONS = ("view",)
CHOSEN_FROM_TODAYS_DATA = {
    "rewrite_skew_joins": "hot keys",
    "select_join_algorithms": "join algorithms",
    "prune_partitions_from_small_side": "partition values",
}


def needs_statistics(expression: exp.Expression, config: OptimizerConfig, materialization: str = "table") -> bool:
    """Whether an enabled rule could use statistics for this query: every rule works on joins or
    on subqueries (a correlated one reads its input twice), so a query without either, or with
    every rule off, costs no statistics I/O. A view keeps only the logical rules: they need two
    joins in one block (an order to choose) or a subquery, derived table or CTE (work to merge).

    >>> import sqlglot
    >>> cfg = OptimizerConfig()
    >>> needs_statistics(sqlglot.parse_one("SELECT a FROM t"), cfg), needs_statistics(sqlglot.parse_one("SELECT a FROM t JOIN u ON t.k = u.k"), cfg)
    (False, True)
    >>> needs_statistics(sqlglot.parse_one("SELECT a FROM t WHERE a > (SELECT AVG(a) FROM t AS u WHERE u.k = t.k)"), cfg)
    True
    >>> needs_statistics(sqlglot.parse_one("SELECT a FROM t LEFT JOIN u ON t.k = u.k"), cfg, "view")
    False
    >>> needs_statistics(sqlglot.parse_one("SELECT a FROM t JOIN u ON t.k = u.k JOIN v ON v.k = u.k"), cfg, "view")
    True
    """
    if materialization in STORED_DEFINITIONS:
        rules = [name for name in RULE_NAMES if name not in CHOSEN_FROM_TODAYS_DATA and config.rule_enabled(name)]
        return bool(rules) and (
            expression.find(exp.Subquery, exp.CTE) is not None
            or any(len(select.args.get("joins") or []) >= 2 for select in expression.find_all(exp.Select))
        )
    return any(config.rule_enabled(name) for name in RULE_NAMES) and (
        expression.find(exp.Join) is not None or expression.find(exp.Subquery) is not None
    )


NOTHING_TO_REWRITE = "no join or subquery"
NOTHING_TO_REWRITE_IN_A_VIEW = "a view with one join and no subquery"


def pass_through(sql: str, reason: str) -> OptimizedQuery:
    """The query as written, with why no rule looked at it (decided before any I/O).

    >>> pass_through("SELECT a FROM t", NOTHING_TO_REWRITE).to_dict()["unchanged_reason"]
    'no join or subquery'
    """
    return OptimizedQuery(sql=sql, original_sql=sql, unchanged_reason=reason)


def _arguments(rule: Rule, available: dict) -> dict:
    """Pass a rule only the arguments it asks for (sqlglot's optimize() does the same)."""
    wanted = inspect.signature(rule).parameters
    return {name: value for name, value in available.items() if name in wanted}


def _block_estimates(expression: exp.Expression, context: OptimizerContext) -> tuple[dict, dict]:
    estimator = Estimator(expression, context.schema, context.statistics)
    blocks = {}
    for i, scope in enumerate(traverse_scope(expression)):
        label = block_label(scope)
        blocks[label if label not in blocks else f"{label} #{i}"] = estimator.estimate(scope.expression).rows.to_dict()
    return blocks, estimator.used


def optimize(sql: str, context: OptimizerContext, prepared: PreparedQuery | None = None) -> OptimizedQuery:
    """`prepared`: `prepare_query(sql, context.schema, context.default_db)` when the caller has
    prepared the query already (the adapter does, to find the keys to gather statistics for); the
    rules work on copies of it."""
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
        if prepared is None:
            prepared = prepare_query(sql, context.schema, context.default_db)
    except UnsupportedQuery as error:
        return finish(str(error))
    except Exception as error:  # sqlglot internals: never let them fail a dbt run
        return finish(f"cannot prepare the query: {type(error).__name__}: {error}")

    expression = prepared.expression
    excluded: dict = {}  # rule -> the rule that fired on this query and excludes it
    for name, rule in RULES:
        enabled = context.config.rule_enabled(name)
        run = RuleRun(rule=name, enabled=enabled)
        result.rules.append(run)
        if not enabled:
            continue
        log = DecisionLog(name)
        if context.materialization in STORED_DEFINITIONS and name in CHOSEN_FROM_TODAYS_DATA:
            log.skipped(
                f"materialized as {context.materialization}: a stored definition does not fix "
                f"{CHOSEN_FROM_TODAYS_DATA[name]} chosen from today's data (Spark chooses when it is read)"
            )
            run.decisions = log.decisions
            continue
        if name in excluded:
            log.skipped(
                f"{excluded[name]} rewrote this query, and the two exclude each other (Hive: correlation "
                "optimizer vs compile-time skew join)"
            )
            run.decisions = log.decisions
            continue
        available = dict(
            schema=context.schema,
            statistics=context.statistics,
            config=context.config,
            materialization=context.materialization,
            bucketing=context.bucketing,
            log=log,
            partitioning=context.partitioning,
            fetched_values=context.fetched_values,
        )
        rule_started = time.perf_counter()
        try:
            candidate = rule(expression.copy(), **_arguments(rule, available))
            run.decisions, run.warnings = log.decisions, log.warnings
            if run.fired:  # a rule that did not fire leaves its copy unused
                check_invariants(candidate, prepared.output_names)
        except Exception as error:
            run.error = f"{type(error).__name__}: {error}"
            run.elapsed_ms = (time.perf_counter() - rule_started) * 1000
            return finish(f"rule {name} failed: {run.error}")
        run.elapsed_ms = (time.perf_counter() - rule_started) * 1000
        if run.fired:
            expression = candidate
            for off in CONFLICTS.get(name, ()):
                excluded.setdefault(off, name)

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
