"""Every rule's fixtures: SQL and statistics in, SQL out; no expected SQL = must not fire."""

import pytest
import sqlglot
from helpers.fixtures import context_for, load_cases

from dbt.adapters.hiveopt.optimizer import optimize
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.pipeline import RULE_NAMES

CASES = [case for rule in RULE_NAMES for case in load_cases(rule)]


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


@pytest.mark.parametrize("case", CASES, ids=str)
def test_rule_switched_off_changes_nothing(case):
    result = optimize(case.sql, context_for(case, only_rule="none-of-them"))
    assert not result.changed and result.sql == case.sql
