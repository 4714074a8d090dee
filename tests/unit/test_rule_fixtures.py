"""Every rule's fixtures: SQL and statistics in, SQL out; no expected SQL = must not fire."""

import pytest
import sqlglot
from helpers.fixtures import context_for, load_cases

from dbt.adapters.hiveopt.optimizer import optimize
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.pipeline import PART_NAMES, RULE_NAMES

CASES = [case for rule in RULE_NAMES for case in load_cases(rule)]
FIRING = [case for case in CASES if case.expected is not None]


def _normalized(sql: str) -> str:
    return sqlglot.transpile(sql, read=DIALECT, write=DIALECT)[0]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_fixture(case):
    result = optimize(case.sql, context_for(case, only_rule=case.rule))
    assert result.fallback_reason is None
    (run,) = [r for r in result.rules if r.rule == case.rule]
    assert run.error is None
    if case.expected is None:
        assert not run.fired, [d.reason for d in run.decisions if d.fired]
        assert result.sql == case.sql  # untouched text, not even regenerated
    else:
        assert run.fired
        assert _normalized(result.sql) == _normalized(case.expected)


@pytest.mark.parametrize("case", FIRING, ids=str)
def test_a_rule_switched_off_does_not_run(case):
    """Every other rule on, the case's own rule off by the text "false" (as a profile's env_var()
    gives it): the pipeline runs, so a broken per-rule switch fails here. With every rule off,
    optimize() returns before any rule (the test below)."""
    context = context_for(case, rule_off=case.rule)
    assert context.config.rules[case.rule] is False  # "false" read as off, not as a truthy string
    result = optimize(case.sql, context)
    assert result.fallback_reason is None and not result.switched_off
    runs = {r.rule: r for r in result.rules}
    assert list(runs) == list(RULE_NAMES)
    run = runs[case.rule]
    assert not run.enabled and run.decisions == [] and run.error is None
    assert case.rule not in result.fired_rules
    assert all(r.enabled for name, r in runs.items() if name != case.rule)
    if not result.fired_rules:
        # Nothing else fired: the query is the text as written, without the rule's rewrite.
        assert not result.changed and result.sql == case.sql
    # The rule's own rewrite is the expected SQL: only the other rules, having fired, could produce it.
    assert result.fired_rules or _normalized(result.sql) != _normalized(case.expected)
    # Where the rule fires with every rule on, switching it off must change the query.
    every_rule = optimize(case.sql, context_for(case))
    if case.rule in every_rule.fired_rules:
        assert _normalized(result.sql) != _normalized(every_rule.sql)


def test_every_rule_switched_off_leaves_the_text_untouched():
    for case in CASES:
        result = optimize(case.sql, context_for(case, only_rule="none-of-them"))
        assert result.switched_off and result.fallback_reason == "every rule switched off", str(case)
        assert not result.changed and result.sql == case.sql, str(case)
        assert not any(r.enabled or r.decisions for r in result.rules), str(case)


SIBLING_CASES = [case for case in FIRING if case.rule == "merge_sibling_aggregates"]


@pytest.mark.parametrize("part", [p for p in PART_NAMES if p.startswith("merge_sibling_aggregates.")])
def test_each_part_of_merge_sibling_aggregates_switches_on_its_own(part):
    """A shape switched off by name ("false", as a profile gives it) changes what the rule writes
    on some fixture, and never breaks it; the other shapes still run."""
    changed = 0
    for case in SIBLING_CASES:
        context = context_for(case, only_rule=case.rule, rule_off=part)
        assert context.config.rules[part] is False
        result = optimize(case.sql, context)
        assert result.fallback_reason is None, str(case)
        assert all(r.error is None for r in result.rules), str(case)
        changed += _normalized(result.sql) != _normalized(case.expected)
    assert changed, f"switching {part} off changed no fixture"


def test_every_part_off_and_the_rule_writes_nothing():
    parts = [p for p in PART_NAMES if p.startswith("merge_sibling_aggregates.")]
    for case in SIBLING_CASES:
        switches = {**{name: name == case.rule for name in RULE_NAMES}, **{p: False for p in parts}}
        context = context_for(case, rules=switches)
        result = optimize(case.sql, context)
        assert not result.fired_rules and result.sql == case.sql, str(case)


def test_an_unknown_part_is_rejected_with_the_known_ones():
    from dbt.adapters.hiveopt.optimizer.config import validate_settings

    _, problems = validate_settings({"rules": {"merge_sibling_aggregates.widen": False}})
    assert len(problems) == 1 and "merge_sibling_aggregates.widen_scalar_siblings" in problems[0]
