"""Where the correlation rules stand in the pipeline: before the join rules, excluding the
compile-time skew-join rule from a query they rewrote (Hive's conflict), decisions on record."""

from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, StatsCatalog, optimize, pipeline

SCHEMA = {"db": {"t": {"q": "int", "p": "double"}}}
SIBLINGS = (
    "SELECT b1.a, b2.c FROM (SELECT AVG(p) AS a FROM db.t WHERE q < 5) b1, "
    "(SELECT COUNT(p) AS c FROM db.t WHERE q >= 5) b2"
)


def run(sql, **config):
    return optimize(
        sql, OptimizerContext(schema=SCHEMA, statistics=StatsCatalog(), config=OptimizerConfig.from_dicts(config))
    )


CORRELATION_RULES = ("merge_correlated_aggregates", "merge_sibling_aggregates")


def test_correlation_rules_run_before_the_join_rules_and_exclude_the_skew_split():
    names = list(pipeline.RULE_NAMES)
    for rule in CORRELATION_RULES:
        assert names.index(rule) < names.index("reorder_joins") < names.index("select_join_algorithms")
    excludes = {rule.name: rule.excludes for rule in pipeline.RULES}
    assert {name for name, off in excludes.items() if "rewrite_skew_joins" in off} == set(CORRELATION_RULES)


def test_siblings_merge_without_statistics_and_record_why():
    result = run(SIBLINGS)
    assert result.fired_rules == ["merge_sibling_aggregates"]
    (run_,) = [r for r in result.rules if r.rule == "merge_sibling_aggregates"]
    (decision,) = run_.decisions
    assert decision.details["siblings"] == ["b1", "b2"] and "FILTER" in decision.reason
    assert "FILTER(WHERE t.q < 5)" in result.sql and "FILTER(WHERE t.q >= 5)" in result.sql


def test_a_query_a_correlation_rule_rewrote_is_left_alone_by_the_skew_rule():
    result = run(SIBLINGS)
    runs = {r.rule: r for r in result.rules}
    assert runs["rewrite_skew_joins"].enabled and runs["merge_sibling_aggregates"].fired
    (decision,) = runs["rewrite_skew_joins"].decisions
    assert not decision.fired and decision.reason.startswith("merge_sibling_aggregates rewrote this query")
    # With the correlation rules off, the skew rule looks at the query itself.
    result = run(SIBLINGS, rules={name: False for name in CORRELATION_RULES})
    runs = {r.rule: r for r in result.rules}
    assert not any(d.reason.startswith("merge_") for d in runs["rewrite_skew_joins"].decisions)


def _correlated_decision(title_start):
    from helpers.fixtures import context_for, load_cases

    (case,) = [c for c in load_cases("merge_correlated_aggregates") if c.title.startswith(title_start)]
    result = optimize(case.sql, context_for(case, only_rule=case.rule))
    (run_,) = [r for r in result.rules if r.rule == case.rule]
    (decision,) = run_.decisions
    return decision


def test_the_window_rule_records_what_spark_would_redo_with_exchange_reuse():
    """Fired: the input's aggregate sits on its sort-merge join (no exchange between them), so a
    second read redoes the join's sorts and the aggregate. Not fired: the input ends in an
    aggregate behind an exchange that Spark reuses; the record says so."""
    fired = _correlated_decision("TPC-DS q1 shape over an input whose aggregate sits on its sort-merge join")
    assert fired.fired and fired.details["redone"].startswith("the sort-merge join of l and o")
    assert fired.details["recompute_bytes"] > fired.details["window_shuffle_bytes"]
    # GROUP BY o.order_id, o.customer: at most |orders| groups, not the product of the NDVs.
    assert fired.details["input_rows"] == 10_000_000
    skipped = _correlated_decision("TPC-DS q1 shape whose input ends in an aggregate behind a shuffle")
    assert not skipped.fired
    assert "only the final aggregate (Spark reuses the exchange below it)" in skipped.reason
