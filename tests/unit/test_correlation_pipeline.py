"""Where the correlation rules stand in the pipeline: before the join rules, switched off by a
compile-time skew-join rule (Hive's conflict), and their decisions on record."""

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, StatsCatalog, optimize
from dbt.adapters.hiveopt.optimizer import pipeline

SCHEMA = {"db": {"t": {"q": "int", "p": "double"}}}
SIBLINGS = ("SELECT b1.a, b2.c FROM (SELECT AVG(p) AS a FROM db.t WHERE q < 5) b1, "
            "(SELECT COUNT(p) AS c FROM db.t WHERE q >= 5) b2")


def run(sql, **config):
    return optimize(sql, OptimizerContext(schema=SCHEMA, statistics=StatsCatalog(), config=OptimizerConfig.from_dicts(config)))


def test_correlation_rules_run_before_the_join_rules():
    names = list(pipeline.RULE_NAMES)
    for rule in pipeline.CORRELATION_RULES:
        assert names.index(rule) < names.index("reorder_joins") < names.index("select_join_algorithms")


def test_siblings_merge_without_statistics_and_record_why():
    result = run(SIBLINGS)
    assert result.fired_rules == ["merge_sibling_aggregates"]
    (run_,) = [r for r in result.rules if r.rule == "merge_sibling_aggregates"]
    (decision,) = run_.decisions
    assert decision.details["siblings"] == ["b1", "b2"] and "FILTER" in decision.reason
    assert "FILTER(WHERE t.q < 5)" in result.sql and "FILTER(WHERE t.q >= 5)" in result.sql


def test_a_skew_join_rule_switches_the_correlation_rules_off(monkeypatch):
    def rewrite_skew_joins(expression: exp.Expression, log):
        return expression

    rules = (("rewrite_skew_joins", rewrite_skew_joins), *pipeline.RULES)
    monkeypatch.setattr(pipeline, "RULES", rules)
    monkeypatch.setattr(pipeline, "RULE_NAMES", tuple(n for n, _ in rules))
    result = run(SIBLINGS)
    runs = {r.rule: r for r in result.rules}
    assert not runs["merge_sibling_aggregates"].enabled and not runs["merge_correlated_aggregates"].enabled
    assert not result.changed
    # With the skew rule off, the correlation rules are back.
    result = run(SIBLINGS, rules={"rewrite_skew_joins": False})
    assert result.fired_rules == ["merge_sibling_aggregates"]
