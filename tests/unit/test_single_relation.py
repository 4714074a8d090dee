"""The token-level pass-through test never passes a query the parser-based test would give the
rules: wherever reads_one_relation says True, the parsed query has no join and no subquery."""

import glob
import os
import re
import sys

import pytest
import sqlglot
from helpers.fixtures import load_cases

from dbt.adapters.hiveopt.optimizer import OptimizerConfig, needs_statistics
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.pipeline import RULE_NAMES
from dbt.adapters.hiveopt.optimizer.single_relation import reads_one_relation

REPO = os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.mark.parametrize(
    "sql, one",
    [
        ("select a from db.t", True),
        ("SELECT a, count(*) AS n FROM db.t WHERE b = 'x, y' GROUP BY a ORDER BY a, n LIMIT 5", True),
        ("select extract(year from d) as y, b from db.t where c > 0", True),
        ("select a from db.t /* join u */ where a = 1", True),
        ("select a from db.t cluster by a, b", True),
        ("select * from db.t tablesample (10 percent)", True),
        ("select a from db.t, db.u", False),
        ("select a from db.t left semi join db.u on t.k = u.k", False),
        ("select a from db.t cross join db.u", False),
        ("select a from db.t lateral view explode(xs) e as x", False),
        ("select a from (select a from db.t) s", False),
        ("with c as (select a from db.t) select a from c", True),
        # dbt's import-CTE style (jaffle_shop's staging models), and a dbt ephemeral model's CTE
        (
            "with source as (select * from db.t), renamed as (select id as k, f(x, 2) as y from source) "
            "select * from renamed",
            True,
        ),
        (
            "with __dbt__cte__e as (select a from db.t where b > 0) select a, count(*) from __dbt__cte__e group by a",
            True,
        ),
        ("with c (x, y) as (select a, b from db.t) select x from c order by y", True),
        ("with c as (select a from db.t) select a from c, db.u", False),
        ("with c as (select a from db.t) select a from c join db.u on c.a = u.a", False),
        ("with c as (select a from db.t), d as (select a from db.u) select * from c join d using (a)", False),
        ("with c as (select a from db.t where a in (select k from db.u)) select a from c", False),
        ("with c as (select a from db.t union all select a from db.u) select a from c", False),
        ("with c as (select a from db.t) select a from c union all select a from c", False),
        ("with recursive c as (select 1 as n) select n from c", False),
        ("with c as (select a from db.t)", False),
        ("select a from (with c as (select a from db.t) select a from c) s", False),
        ("(select a from db.t)", False),
        ("select a from db.t union all select a from db.u", False),
        ("select a from db.t where exists (select 1 from db.u where u.k = t.k)", False),
        ("select a from values (1), (2) as v(a)", False),  # commas in FROM: the parser decides
        ("select 'unterminated from db.t", False),
        ("", False),
    ],
)
def test_cases(sql, one):
    assert reads_one_relation(sql) is one


def _corpus() -> list[str]:
    """Fixture inputs, the example project's and TPC-H models (Jinja removed), fuzz queries."""
    sqls = [case.sql for rule in RULE_NAMES for case in load_cases(rule)]
    for path in glob.glob(os.path.join(REPO, "integration_tests", "models", "**", "*.sql"), recursive=True):
        with open(path) as handle:
            text = re.sub(r"\{%.*?%\}", "", handle.read(), flags=re.S)
        sqls.append(re.sub(r"\{\{.*?\}\}", "db.x", text, flags=re.S))
    if os.path.abspath(REPO) not in map(os.path.abspath, sys.path):
        sys.path.insert(0, os.path.abspath(REPO))  # the fuzz package, also when this file runs alone
    from fuzz.queries import QueryGenerator
    from fuzz.tables import build_data

    data = build_data()
    sqls += [QueryGenerator(data, seed=seed).query().sql for seed in range(300)]
    return sqls


def test_never_passes_what_a_rule_could_rewrite():
    config = OptimizerConfig()
    passed = 0
    for sql in _corpus():
        if not reads_one_relation(sql):
            continue
        passed += 1
        parsed = sqlglot.parse_one(sql, read=DIALECT)
        assert not needs_statistics(parsed, config), sql
    assert passed >= 10  # the corpus has single-relation queries (staging models, TPC-H Q1 and Q6)


def test_every_fixture_a_rule_rewrites_needs_statistics():
    """The gate before any I/O (needs_statistics) lets through every query a rule rewrites in the
    fixtures, at the materialization the case builds. A correlated EXISTS over the outer block's
    own relation, with no join, is one (sqlglot holds an EXISTS's SELECT in no exp.Subquery)."""
    config = OptimizerConfig()
    rewritten = 0
    for rule in RULE_NAMES:
        for case in load_cases(rule):
            if case.expected is None:
                continue
            rewritten += 1
            parsed = sqlglot.parse_one(case.sql, read=DIALECT)
            assert needs_statistics(parsed, config, case.meta.get("materialization", "table")), f"{case}: {case.sql}"
    assert rewritten >= 70
