"""Broken and exotic SQL: the optimizer returns the original SQL and says why."""

import pytest

from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, StatsCatalog, optimize
from dbt.adapters.hiveopt.optimizer.pipeline import RULE_NAMES
from dbt.adapters.hiveopt.optimizer.prepare import prepare_query

SCHEMA = {"db": {"t": {"k": "int", "Name": "string"}, "u": {"k": "int"}, "v": {"k": "int", "j": "int"}}}
STATS = StatsCatalog.from_dict({"db.t": {"row_count": 10**8}, "db.u": {"row_count": 10}})


def run(sql, **config):
    return optimize(sql, OptimizerContext(schema=SCHEMA, statistics=STATS, config=OptimizerConfig.from_dicts(config)))


@pytest.mark.parametrize(
    "sql, reason",
    [
        ("SELEC k FROM db.t", "cannot parse"),
        ("SELECT k FROM db.t; SELECT k FROM db.u", "expected one statement"),
        ("INSERT INTO db.t SELECT * FROM db.u", "not a query"),
        ("SELECT k FROM db.missing", "no schema for db.missing"),
        ("SELECT nope FROM db.t", "cannot qualify"),
        ("SELECT k + 1 FROM db.t", "without an alias"),
        ("SELECT t.k FROM db.t JOIN db.u ON t.k = u.k", None),
        # Found by the fuzzer: sqlglot reads `name.k` as a field of column `name` when `name` aliases a
        # SEMI or ANTI joined table that has a column of that name.
        ("SELECT t.k FROM db.t ANTI JOIN db.v AS j ON t.k = j.k", "a column read as a field"),
    ],
)
def test_fallback_reasons(sql, reason):
    result = run(sql)
    if reason is None:
        assert result.fallback_reason is None
    else:
        assert reason in result.fallback_reason
        assert result.sql == sql and not result.changed


def test_switched_off():
    result = run("SELECT t.k FROM db.t JOIN db.u ON t.k = u.k", enabled=False)
    assert result.fallback_reason == "optimizer switched off" and result.switched_off and not result.changed
    result = run("SELECT t.k FROM db.t JOIN db.u ON t.k = u.k", rules={name: False for name in RULE_NAMES})
    assert result.fallback_reason == "every rule switched off" and result.switched_off


def test_a_failing_rule_falls_back(monkeypatch):
    from dbt.adapters.hiveopt.optimizer import pipeline

    def broken(expression):
        raise RuntimeError("boom")

    monkeypatch.setattr(pipeline, "RULES", (("select_join_algorithms", broken),))
    result = run("SELECT t.k FROM db.t JOIN db.u ON t.k = u.k")
    assert "rule select_join_algorithms failed: RuntimeError: boom" in result.fallback_reason
    assert not result.changed


def test_a_rule_that_changes_output_columns_is_caught(monkeypatch):
    from sqlglot import exp

    from dbt.adapters.hiveopt.optimizer import pipeline

    def renames(expression, log):
        expression.selects[0].set("alias", exp.to_identifier("other"))
        log.fired("renamed")
        return expression

    monkeypatch.setattr(pipeline, "RULES", (("select_join_algorithms", renames),))
    result = run("SELECT t.k FROM db.t JOIN db.u ON t.k = u.k")
    assert "output columns changed" in result.fallback_reason


@pytest.mark.parametrize(
    "sql, names",
    [
        ("SELECT k AS MyKey, name FROM db.t", ["MyKey", "Name"]),
        ("SELECT * FROM db.t", ["k", "Name"]),
        ("SELECT `Odd Name` FROM (SELECT k AS `Odd Name` FROM db.t) x", ["Odd Name"]),
        ("SELECT k FROM db.t UNION ALL SELECT k FROM db.u", ["k"]),
    ],
)
def test_output_names_keep_their_case(sql, names):
    assert prepare_query(sql, SCHEMA).output_names == names


def test_distinct_order_by_guard():
    # TPC-DS q41's shape: ORDER BY must name the DISTINCT output, not the qualified column.
    q = prepare_query("SELECT DISTINCT (name) FROM db.t ORDER BY name LIMIT 10", SCHEMA).expression
    key = q.args["order"].expressions[0].this
    assert key.name.lower() == "name" and not key.table


def test_nondeterministic_aliases_are_never_duplicated():
    # Expanding `GROUP BY r` into `GROUP BY rand()` would draw a second random number: the alias
    # is kept, and as sqlglot cannot resolve it then, the query runs as written.
    result = run("SELECT rand() AS r, COUNT(*) AS c FROM db.t JOIN db.u ON t.k = u.k GROUP BY r")
    assert result.sql.upper().count("RAND()") == 1


def test_a_query_prepared_by_the_caller_is_used_as_is_and_left_unchanged():
    """The adapter prepares the query once (for the statistics' key columns) and hands it over."""
    sql = "SELECT t.k, u.k AS uk FROM db.t JOIN db.u ON t.k = u.k"
    prepared = prepare_query(sql, SCHEMA)
    before = prepared.expression.sql("spark")
    context = OptimizerContext(schema=SCHEMA, statistics=STATS, config=OptimizerConfig.from_dicts({}))
    handed = optimize(sql, context, prepared)
    assert handed.changed and handed.sql == optimize(sql, context).sql
    assert prepared.expression.sql("spark") == before  # the rules worked on copies
