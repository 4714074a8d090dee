"""The optimizer pipeline: parse and qualify, run the rules in order, check invariants after
each, generate Spark SQL. Any failure returns the original SQL with the reason.

>>> from dbt.adapters.hiveopt.optimizer.context import OptimizerContext
>>> optimize("SELECT 1 AS one", OptimizerContext()).changed
False
>>> optimize("SELECT FROM WHERE", OptimizerContext()).fallback_reason.startswith("cannot parse")
True
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from dbt.adapters.hiveopt.optimizer.blocks import block_label
from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.context import OptimizedQuery, OptimizerContext
from dbt.adapters.hiveopt.optimizer.cost_model import CostModel
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog, RuleRun
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.invariants import check_invariants, generate_checked
from dbt.adapters.hiveopt.optimizer.join_trees import join_trees
from dbt.adapters.hiveopt.optimizer.prepare import PreparedQuery, UnsupportedQuery, name_outputs, prepare_query
from dbt.adapters.hiveopt.optimizer.rule import Rule, check_report
from dbt.adapters.hiveopt.optimizer.rules.merge_correlated_aggregates import merge_correlated_aggregates
from dbt.adapters.hiveopt.optimizer.rules.merge_sibling_aggregates import SHAPE_NAMES, merge_sibling_aggregates
from dbt.adapters.hiveopt.optimizer.rules.prune_partitions_from_small_side import (
    plan_value_fetches,
    prune_partitions_from_small_side,
)
from dbt.adapters.hiveopt.optimizer.rules.reorder_joins import reorder_joins
from dbt.adapters.hiveopt.optimizer.rules.rewrite_skew_joins import rewrite_skew_joins, weighs_hot_key_shares
from dbt.adapters.hiveopt.optimizer.rules.select_join_algorithms import select_join_algorithms
from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
from dbt.adapters.hiveopt.optimizer.syntax import has_nested_query, mark_volatile

# The rules, in order. Each says why it stands where it does. Qualification (resolving every
# column to its relation) runs before all of them in prepare_query.
RULES: tuple[Rule, ...] = (
    Rule(
        "merge_correlated_aggregates",
        merge_correlated_aggregates,
        why_here="first: it removes a relation (or a subquery) from a block, so the join rules after it plan "
        "the block that will actually run, not the one that reads the input twice",
        # Hive turns its correlation optimizer off when compile-time skew join is on: a skew rewrite
        # splits a join by key into a UNION ALL, a correlation merge reads an input once by the same
        # key, and each one's cost was computed for the query without the other. Whichever fires
        # first on a query (the correlation rules stand first) keeps it.
        excludes=("rewrite_skew_joins",),
    ),
    Rule(
        "merge_sibling_aggregates",
        merge_sibling_aggregates,
        why_here="before the join rules for the same reason (siblings merged leave one relation where there "
        "were several); independent of merge_correlated_aggregates (aggregate with aggregate, not with rows)",
        excludes=("rewrite_skew_joins",),
        parts=SHAPE_NAMES,
    ),
    Rule(
        "reorder_joins",
        reorder_joins,
        why_here="before the algorithm choice: which joins exist, and in what order, decides what is a build side",
    ),
    Rule(
        "rewrite_skew_joins",
        rewrite_skew_joins,
        why_here="after the order is fixed (it splits the block's first join), before the algorithm choice: its "
        "hot-key branch carries its own BROADCAST hint, and the broadcast rule sizes the rest like any join",
        chosen_from_todays_data="hot keys",
    ),
    Rule(
        "select_join_algorithms",
        select_join_algorithms,
        why_here="last of the join rules: it sizes the build sides of the tree as the earlier rules leave it",
        chosen_from_todays_data="join algorithms",
    ),
    Rule(
        "prune_partitions_from_small_side",
        prune_partitions_from_small_side,
        why_here="after the algorithm choice: it leaves to Spark's DPP the joins Spark broadcasts, and wraps the "
        "big side only once the join order and hints are settled",
        chosen_from_todays_data="partition values",
        prepass=plan_value_fetches,
    ),
)

RULE_NAMES = tuple(rule.name for rule in RULES)
# The parts of rules that can be switched on their own (`merge_sibling_aggregates.widen_scalar_siblings`).
PART_NAMES = tuple(part for rule in RULES for part in rule.part_names)

# A view is a stored definition: Spark plans it each time it is read, and the models that read
# it are planned through it, on the data as it is then. Choices made from today's sizes and values
# (a join algorithm, hot keys, partition values) are not written into it: a BROADCAST fixed while a
# table was small stays when it has grown. The logical rewrites (join order, merged work) hold.
STORED_DEFINITIONS = ("view",)


def value_fetches(
    expression: exp.Expression,
    schema: dict,
    statistics: StatsCatalog,
    config: OptimizerConfig,
    materialization: str,
    partitioning: dict[str, list[str]],
    volatile: Iterable[str] = (),
) -> list:
    """What the enabled rules' pre-passes ask the adapter to fetch before optimize() (pure: no I/O).
    `volatile`: OptimizerContext.volatile_relations (marked on `expression`)."""
    mark_volatile(expression, volatile)
    fetches: list = []
    estimator = Estimator(expression, schema, statistics)
    for rule in RULES:
        if rule.prepass is not None and config.rule_enabled(rule.name):
            fetches.extend(rule.prepass(expression, estimator, config, materialization, partitioning))
    return fetches


def weighs_task_slots(
    expression: exp.Expression, schema: dict, statistics: StatsCatalog, config: OptimizerConfig
) -> bool:
    """Whether the skew split weighs a hot key's share against the task slots on this query, the
    one decision that uses them (pure: the rule runs on a copy and says so). Where a server's task
    slots cost a Spark job, the adapter asks them only then, before the rules. The split looks at
    each block's first join as written; after a reorder that join may be another one, and the
    split then weighs with the configured default (an estimate, never the rows).

    >>> from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
    >>> schema = {"db": {"f": {"k": "int"}, "d": {"k": "int"}}}
    >>> stats = StatsCatalog.from_dict({
    ...     "db.f": {"row_count": 10**8, "columns": {"k": {"ndv": 10**6, "heavy_hitters": [[42, 9 * 10**7]]}}},
    ...     "db.d": {"row_count": 10**7, "columns": {"k": {"ndv": 10**7}}}})
    >>> query = prepare_query("SELECT * FROM db.f JOIN db.d ON f.k = d.k", schema).expression
    >>> weighs_task_slots(query, schema, stats, OptimizerConfig())
    True
    >>> weighs_task_slots(query, schema, StatsCatalog(), OptimizerConfig())
    False
    """
    if not config.rule_enabled("rewrite_skew_joins"):
        return False
    copy = expression.copy()  # the rule rewrites what it splits
    return weighs_hot_key_shares(copy, Estimator(copy, schema, statistics), config)


def needs_statistics(expression: exp.Expression, config: OptimizerConfig, materialization: str = "table") -> bool:
    """Whether an enabled rule could use statistics for this query: every rule works on joins or
    on subqueries (a correlated one reads its input twice), so a query without either, or with
    every rule off, costs no statistics I/O. A view keeps only the logical rules: they need two
    joins in one block (an order to choose), a subquery or derived table, or a CTE joined to
    something (work to merge). A chain of CTEs that each read the one before, dbt's import-CTE
    style of staging model, has none of these. A subquery is any SELECT nested in another, EXISTS
    and ALL included (syntax.has_nested_query; sqlglot wraps those in no exp.Subquery).

    >>> import sqlglot
    >>> cfg = OptimizerConfig()
    >>> def needs(sql, materialization="table"):
    ...     return needs_statistics(sqlglot.parse_one(sql), cfg, materialization)
    >>> needs("SELECT a FROM t"), needs("SELECT a FROM t JOIN u ON t.k = u.k")
    (False, True)
    >>> needs("SELECT a FROM t WHERE a > (SELECT AVG(a) FROM t AS u WHERE u.k = t.k)")
    True
    >>> needs("SELECT a FROM t WHERE EXISTS (SELECT * FROM t AS u WHERE u.k = t.k AND u.s <> t.s)")
    True
    >>> chain = "WITH source AS (SELECT * FROM t), renamed AS (SELECT a AS b FROM source) SELECT * FROM renamed"
    >>> needs(chain), needs(chain, "view")
    (False, False)
    >>> needs("WITH agg AS (SELECT k, AVG(a) AS m FROM t GROUP BY k) SELECT * FROM t JOIN agg ON t.k = agg.k", "view")
    True
    >>> needs("SELECT a FROM t LEFT JOIN u ON t.k = u.k", "view")
    False
    >>> needs("SELECT a FROM t JOIN u ON t.k = u.k JOIN v ON v.k = u.k", "view")
    True
    """
    nested = has_nested_query(expression)
    if materialization in STORED_DEFINITIONS:
        rules = [r.name for r in RULES if r.chosen_from_todays_data is None and config.rule_enabled(r.name)]
        return bool(rules) and (
            nested
            or (expression.find(exp.CTE) is not None and expression.find(exp.Join) is not None)
            or any(len(select.args.get("joins") or []) >= 2 for select in expression.find_all(exp.Select))
        )
    return any(config.rule_enabled(name) for name in RULE_NAMES) and (expression.find(exp.Join) is not None or nested)


NOTHING_TO_REWRITE = "no join or subquery"
NOTHING_TO_REWRITE_IN_A_VIEW = "a view with one join and no subquery"


def pass_through(sql: str, reason: str) -> OptimizedQuery:
    """The query as written, with why no rule looked at it (decided before any I/O).

    >>> pass_through("SELECT a FROM t", NOTHING_TO_REWRITE).to_dict()["unchanged_reason"]
    'no join or subquery'
    """
    return OptimizedQuery(sql=sql, original_sql=sql, unchanged_reason=reason)


def _block_estimates(expression: exp.Expression, estimator: Estimator) -> tuple[dict, dict]:
    # The query as written (no rule fired) is the estimator's own tree, never changed in place
    # (rules change copies): its estimates are already made.
    estimator = estimator if expression is estimator.root else estimator.over(expression)
    blocks = {}
    for i, scope in enumerate(traverse_scope(expression)):
        label = block_label(scope)
        blocks[label if label not in blocks else f"{label} #{i}"] = estimator.estimate(scope.expression).rows.to_dict()
    return blocks, estimator.used


def _run_rule(
    rule: Rule,
    run: RuleRun,
    expression: exp.Expression,
    prepared: PreparedQuery,
    context: OptimizerContext,
    excluded: dict[str, str],
    estimator: Estimator,
    cost_model: CostModel,
    spare: exp.Expression | None = None,
) -> tuple[exp.Expression, exp.Expression | None]:
    """One rule's pass: the tree it returns when it fired and kept the contract, else the tree it
    was given. A failure costs only this rule's rewrite, with one warning. Also returns a copy of
    that tree the next rule may work on (None: make one): `spare`, a copy equal to `expression`
    that the rule before left untouched, saves a deep copy."""
    log = DecisionLog(rule.name)
    if context.materialization in STORED_DEFINITIONS and rule.chosen_from_todays_data:
        log.skipped(
            f"materialized as {context.materialization}: a stored definition does not fix "
            f"{rule.chosen_from_todays_data} chosen from today's data (Spark chooses when it is read)"
        )
        run.decisions = log.decisions
        return expression, spare
    if rule.name in excluded:
        log.skipped(
            f"{excluded[rule.name]} rewrote this query, and the two exclude each other (Hive: correlation "
            "optimizer vs compile-time skew join)"
        )
        run.decisions = log.decisions
        return expression, spare
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
    started = time.perf_counter()
    try:
        copy = spare if spare is not None else expression.copy()
        available.update(estimator=estimator.over(copy), cost_model=cost_model)
        candidate = rule.function(copy, **rule.arguments(available))
        run.decisions, run.warnings = log.decisions, log.warnings
        check_report(rule.name, run.fired, expression, candidate)
        if run.fired:
            check_invariants(candidate, prepared.output_names)
    except Exception as error:
        run.decisions, run.warnings = log.decisions, log.warnings
        run.error = f"{type(error).__name__}: {error}"
        run.warnings.append(f"rule {rule.name} failed ({run.error}): its rewrite is skipped, the other rules' kept")
        candidate = copy = expression
    run.elapsed_ms = (time.perf_counter() - started) * 1000
    if run.fired:
        return candidate, None
    # Not fired and the contract kept: the rule handed back its copy equal to the tree it was
    # given (check_report), so the next rule can work on it. A deep copy per rule was a third of
    # the optimizer's time on TPC-DS models no rule rewrote (wide trees, six rules).
    return expression, (copy if candidate is copy and copy is not expression else None)


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
            names_later = context.spark_output_names is not None
            prepared = prepare_query(sql, context.schema, context.default_db, names_later=names_later)
    except UnsupportedQuery as error:
        return finish(str(error))
    except Exception as error:  # sqlglot internals: never let them fail a dbt run
        return finish(f"cannot prepare the query: {type(error).__name__}: {error}")

    expression = mark_volatile(prepared.expression, context.volatile_relations)
    # One estimator and one cost model per query: every rule asks them for rows and costs.
    estimator = Estimator(expression, context.schema, context.statistics)
    cost_model = CostModel(context.config.broadcast_threshold_bytes, context.config.parallelism)
    excluded: dict[str, str] = {}  # rule -> the rule that fired on this query and excludes it
    spare: exp.Expression | None = None
    for rule in RULES:
        run = RuleRun(rule=rule.name, enabled=context.config.rule_enabled(rule.name))
        result.rules.append(run)
        if run.enabled:
            expression, spare = _run_rule(
                rule, run, expression, prepared, context, excluded, estimator, cost_model, spare
            )
            if run.fired:
                for off in rule.excludes:
                    excluded.setdefault(off, rule.name)

    try:
        result.estimates, result.statistics_used = _block_estimates(expression, estimator)
    except Exception as error:  # the report is best effort; the query is not affected
        result.estimates = {"error": f"{type(error).__name__}: {error}"}
    try:  # the join trees as written and, where a rule changed the query, as rewritten
        result.join_trees = {"written": join_trees(prepared.expression, estimator)}
        if any(r.fired for r in result.rules):
            result.join_trees["chosen"] = join_trees(expression, estimator)
    except Exception as error:
        result.join_trees = {"error": f"{type(error).__name__}: {error}"}
    if any(r.fired for r in result.rules):
        # Only a query a rule changed is regenerated; otherwise Spark runs the text as written.
        if prepared.placeholders:  # and only then does it need Spark's names for its outputs
            asked = context.spark_output_names() if context.spark_output_names is not None else None
            try:
                name_outputs(expression, prepared, asked)
            except UnsupportedQuery as error:
                return finish(str(error))
        try:
            result.sql, result.changed = generate_checked(expression), True
        except Exception as error:
            return finish(f"generated SQL failed its check: {error}")
    return finish()
