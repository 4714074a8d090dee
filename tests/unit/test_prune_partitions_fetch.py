"""prune_partitions_from_small_side without Spark: the fetch queries the pre-pass runs, and the
literals the rule writes (Spark runs them in tests/spark/test_prune_partitions.py)."""

import sqlglot
from helpers.fixtures import Case, context_for

from dbt.adapters.hiveopt.optimizer import optimize
from dbt.adapters.hiveopt.optimizer.context import FetchedValues
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.pipeline import value_fetches
from dbt.adapters.hiveopt.optimizer.rules.prune_partitions_from_small_side import sql_expression

RULE = "prune_partitions_from_small_side"


def _context(sql, **meta):
    return context_for(Case(RULE, "unit", sql, None, "pruning", meta), only_rule=RULE)


def _fetches(sql, context):
    return value_fetches(
        sql_expression(sql, context),
        context.schema,
        context.statistics,
        context.config,
        context.materialization,
        context.partitioning,
    )


def test_a_cte_small_side_is_fetched_with_its_definition():
    sql = (
        "WITH picked AS (SELECT day FROM sales.days WHERE year = 2020) "
        "SELECT e.amount FROM sales.events e JOIN picked p ON e.day = p.day"
    )
    (fetch,) = _fetches(sql, _context(sql))
    assert fetch.values_query.sql(DIALECT) == (
        "WITH picked AS (SELECT days.day AS day FROM sales.days AS days WHERE days.year = 2020) "
        "SELECT DISTINCT p.day AS k FROM picked AS p WHERE NOT p.day IS NULL LIMIT 1001"
    )
    assert fetch.range_query.sql(DIALECT).startswith("WITH picked AS")
    assert "MIN(p.day) AS low, MAX(p.day) AS high" in fetch.range_query.sql(DIALECT)


def test_nothing_is_fetched_for_a_view_or_with_the_rule_off():
    sql = "SELECT e.amount FROM sales.events e JOIN sales.days d ON e.day = d.day WHERE d.year = 2020"
    assert _fetches(sql, _context(sql))
    assert not _fetches(sql, _context(sql, materialization="view"))
    context = _context(sql)
    context.config.rules[RULE] = False
    assert not _fetches(sql, context)


def test_string_values_cannot_change_the_query():
    sql = (
        "SELECT e.amount, r.zone FROM sales.events e JOIN sales.regions r ON e.region = r.region WHERE r.zone = 'north'"
    )
    context = _context(sql)
    nasty = ["') OR 1=1 --", "it's", "back\\slash", "\\'", "x\\"]
    context.fetched_values = {f.key: FetchedValues(values=nasty + [None]) for f in _fetches(sql, context)}
    result = optimize(sql, context)
    assert result.changed
    (in_list,) = sqlglot.parse_one(result.sql, read=DIALECT).find_all(sqlglot.exp.In)
    assert sorted(v.this for v in in_list.expressions) == sorted(nasty)


def test_values_of_another_type_than_the_key_are_not_written():
    sql = "SELECT e.amount FROM sales.events e JOIN sales.days d ON e.day = d.day WHERE d.year = 2020"
    context = _context(sql)
    context.fetched_values = {f.key: FetchedValues(values=[1, "2"]) for f in _fetches(sql, context)}
    result = optimize(sql, context)
    assert not result.changed
    (run,) = [r for r in result.rules if r.rule == RULE]
    assert any("does not fit the key's type (integral)" in d.reason for d in run.decisions)


def test_where_the_fetch_fails_a_semi_join_filter_goes_below_the_aggregate():
    """What the adapter does on a connection that cannot cancel a statement (ODBC): its bounded run
    refuses, the fetch records the error, and the rule writes the small side's keys as a subquery."""
    import time
    from types import SimpleNamespace

    from dbt.adapters.hiveopt.impl import HiveoptAdapter, fetch_small_side_values

    odbc = SimpleNamespace(handle=object())  # a wrapper without run_bounded
    adapter = SimpleNamespace(
        config=SimpleNamespace(credentials=SimpleNamespace(method="odbc")),
        connections=SimpleNamespace(get_thread_connection=lambda: odbc),
    )
    sql = (
        "SELECT a.total, d.month FROM (SELECT day, SUM(amount) AS total FROM sales.events GROUP BY day) a "
        "JOIN sales.days d ON a.day = d.day WHERE d.year = 2020"
    )
    context = _context(sql)
    deadline = time.perf_counter() + 5
    context.fetched_values = {
        f.key: fetch_small_side_values(f, 1000, lambda text: HiveoptAdapter._run_bounded(adapter, text, deadline))
        for f in _fetches(sql, context)
    }
    assert all("cannot cancel a statement" in v.error for v in context.fetched_values.values())
    result = optimize(sql, context)
    assert (
        "a.day IN (SELECT /*+ BROADCAST(d) */ d.day AS k FROM sales.days AS d WHERE d.year = 2020 AND NOT d.day "
        "IS NULL)" in result.sql
    )
    (rule,) = [r for r in result.rules if r.rule == RULE]
    assert [d.reason for d in rule.decisions if d.fired][0].endswith(
        "injected a semi-join filter below the aggregate (the small side's values could not be fetched: "
        "fetch failed (RuntimeError: the odbc connection cannot cancel a statement at a deadline))"
    )
