"""prune_partitions_from_small_side on a real Spark: the small side's keys are fetched the way the
adapter fetches them (same function, same queries), the rule injects them, and the results equal
the original's, with NULL keys, duplicate keys and string keys holding quotes and backslashes.
The executed plans show the literals reaching the scan (Parquet pushed filters, partition filters)."""

from collections import Counter

import pytest
from helpers.results import rows_of

from dbt.adapters.hiveopt.impl import fetch_small_side_values
from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, StatsCatalog, optimize, prepare_query
from dbt.adapters.hiveopt.optimizer.pipeline import value_fetches

pytestmark = pytest.mark.spark

RULE = "prune_partitions_from_small_side"
STRINGS = ["it's", "back\\slash", "a'b\\'c", "plain", "x\\", "\\'", None]
SCHEMA = {
    "prune_t": {
        "facts": {"k": "int", "s": "string", "v": "int"},
        "facts_by_k": {"v": "int", "s": "string", "k": "int"},
        "dims": {"k": "int", "s": "string", "c": "string"},
    }
}
BIG = {
    "row_count": 500_000_000,
    "size_bytes": 20_000_000_000,
    "columns": {
        "k": {"ndv": 1000, "null_count": 1000, "min": 0, "max": 1000},
        "s": {"ndv": 1000, "avg_width": 6},
        "v": {"ndv": 1000},
    },
}
STATS = StatsCatalog.from_dict(
    {
        "prune_t.facts": BIG,
        "prune_t.facts_by_k": BIG,
        "prune_t.dims": {
            "row_count": 40,
            "size_bytes": 2000,
            "columns": {"k": {"ndv": 12}, "s": {"ndv": 7, "avg_width": 6}, "c": {"ndv": 3, "avg_width": 1}},
        },
    }
)
PARTITIONING = {"prune_t.facts_by_k": ["k"]}


@pytest.fixture(scope="module")
def tables(spark):
    spark.sql("CREATE DATABASE IF NOT EXISTS prune_t")
    facts = [(k, STRINGS[i % len(STRINGS)], i) for i, k in enumerate([*range(12), None, 3, 3, 7, None] * 6)]
    dims = [
        (k, STRINGS[i % len(STRINGS)], "abc"[i % 3]) for i, k in enumerate([1, 2, 3, 3, None, 5, 7, 9, None, 11, 2, 4])
    ]
    spark.createDataFrame(facts, "k int, s string, v int").write.mode("overwrite").saveAsTable("prune_t.facts")
    spark.createDataFrame(facts, "k int, s string, v int").select("v", "s", "k").write.partitionBy("k").mode(
        "overwrite"
    ).saveAsTable("prune_t.facts_by_k")
    spark.createDataFrame(dims, "k int, s string, c string").write.mode("overwrite").saveAsTable("prune_t.dims")
    return spark


def run_with_fetch(spark, sql, materialization="table", **settings):
    """What the adapter does: plan the fetches, run them on Spark, optimize with the values."""
    settings = {"sorted_keys": {"prune_t.facts": ["k", "s"]}, **settings}  # small tables: one row group anyway
    return _optimize(
        sql,
        materialization,
        lambda config, expression: {
            f.key: fetch_small_side_values(
                f, config.prune_max_values, lambda text: [tuple(r) for r in spark.sql(text).collect()]
            )
            for f in value_fetches(expression, SCHEMA, STATS, config, materialization, PARTITIONING)
        },
        **settings,
    )


def run_without_fetch(sql, **settings):
    """What the adapter does when the values cannot be fetched (Thrift, Connect, a timeout, or
    prune_fetch_values off): the rule sees no values."""
    return _optimize(sql, "table", lambda config, expression: {}, prune_fetch_values=False, **settings)


def _optimize(sql, materialization, fetch, **settings):
    config = OptimizerConfig.from_dicts(
        {"rules": {"select_join_algorithms": False, "reorder_joins": False}, **settings}
    )
    context = OptimizerContext(
        schema=SCHEMA, statistics=STATS, config=config, materialization=materialization, partitioning=PARTITIONING
    )
    context.fetched_values = fetch(config, prepare_query(sql, SCHEMA).expression)
    result = optimize(sql, context)
    assert result.fallback_reason is None
    (rule,) = [r for r in result.rules if r.rule == RULE]
    return result, rule


FIRING = {
    "int key, NULL and duplicate keys on both sides": (
        "SELECT f.k, f.v, d.c FROM prune_t.facts f JOIN prune_t.dims d ON f.k = d.k WHERE d.c = 'a'",
        {},
    ),
    "string keys with quotes and backslashes": (
        "SELECT f.s, f.v, d.c FROM prune_t.facts f JOIN prune_t.dims d ON f.s = d.s WHERE d.c IN ('a', 'b')",
        {},
    ),
    "null-supplying side of a LEFT join": (
        "SELECT d.k AS dk, d.c, f.v FROM prune_t.dims d LEFT JOIN prune_t.facts f ON f.k = d.k WHERE d.c = 'b'",
        {},
    ),
    "semi join": ("SELECT f.v FROM prune_t.facts f LEFT SEMI JOIN prune_t.dims d ON f.s = d.s AND d.c = 'c'", {}),
    "small side in a CTE": (
        "WITH picked AS (SELECT k FROM prune_t.dims WHERE c <> 'a') SELECT f.v FROM prune_t.facts f JOIN picked "
        "p ON f.k = p.k",
        {},
    ),
    "fact aggregated before the join": (
        "SELECT a.k, a.total FROM (SELECT k, SUM(v) AS total FROM prune_t.facts GROUP BY k) a "
        "JOIN prune_t.dims d ON a.k = d.k WHERE d.c = 'a'",
        {},
    ),
    "more values than the bound: a range": (
        "SELECT f.k, f.v FROM prune_t.facts f JOIN prune_t.dims d ON f.k = d.k WHERE d.c IN ('a', 'b')",
        {"prune_max_values": 2},
    ),
    "an empty small side: FALSE": (
        "SELECT f.k, f.v FROM prune_t.facts f JOIN prune_t.dims d ON f.k = d.k WHERE d.c = 'zzz'",
        {},
    ),
}


@pytest.mark.parametrize("title", list(FIRING))
def test_fires_and_keeps_results(tables, title):
    sql, settings = FIRING[title]
    result, rule = run_with_fetch(tables, sql, **settings)
    assert rule.fired, [d.reason for d in rule.decisions]
    original, optimized = tables.sql(sql), tables.sql(result.sql)
    assert optimized.columns == original.columns
    expected = Counter(rows_of(tables, sql))
    assert Counter(rows_of(tables, result.sql)) == expected
    if "empty" not in title:
        assert expected, "the data must exercise the query"


def _plan(spark, sql):
    return spark.sql(sql)._jdf.queryExecution().executedPlan().toString()


def test_string_literals_reach_the_parquet_reader(tables):
    sql, _ = FIRING["string keys with quotes and backslashes"]
    result, _ = run_with_fetch(tables, sql)
    plan = _plan(tables, result.sql)
    assert "PushedFilters: [IsNotNull(s), In(s," in plan or "In(s, [" in plan, plan
    assert "it's" in plan and "back\\slash" in plan


def test_the_filter_reaches_the_scan_below_the_aggregate(tables):
    sql, _ = FIRING["fact aggregated before the join"]
    result, _ = run_with_fetch(tables, sql)
    scan = [line for line in _plan(tables, result.sql).splitlines() if "PushedFilters" in line]
    assert scan and "In(k," in scan[0], scan


@pytest.mark.parametrize(
    "sql, materialization, why",
    [
        (
            "SELECT f.k, f.v FROM prune_t.facts f JOIN prune_t.dims d ON f.k = d.k WHERE d.c = 'a'",
            "view",
            "stored definition",
        ),
        (
            "SELECT f.k, d.c FROM prune_t.facts f LEFT JOIN prune_t.dims d ON f.k = d.k AND d.c = 'a'",
            "table",
            "preserved side",
        ),
        (
            "SELECT f.v, d.c FROM prune_t.facts_by_k f JOIN prune_t.dims d ON f.k = d.k WHERE d.c = 'a'",
            "table",
            "dynamic partition pruning",
        ),
        (
            "SELECT a.k, a.total FROM (SELECT k, SUM(v) AS total FROM prune_t.facts_by_k GROUP BY k) a "
            "JOIN prune_t.dims d ON a.k = d.k WHERE d.c = 'a'",
            "table",
            "through the aggregate",
        ),
    ],
)
def test_does_not_fire(tables, sql, materialization, why):
    result, rule = run_with_fetch(tables, sql, materialization=materialization)
    assert not rule.fired and result.sql == sql
    assert any(why in d.reason for d in rule.decisions), [d.reason for d in rule.decisions]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT /*+ BROADCAST(d) */ f.v, d.c FROM prune_t.facts_by_k f JOIN prune_t.dims d ON f.k = d.k WHERE "
        "d.c = 'a'",
        "SELECT /*+ BROADCAST(d) */ a.k, a.total FROM (SELECT k, SUM(v) AS total FROM prune_t.facts_by_k GROUP BY k) a "
        "JOIN prune_t.dims d ON a.k = d.k WHERE d.c = 'a'",
    ],
)
def test_spark_prunes_the_broadcast_cases_itself(tables, sql):
    """The cases the rule leaves to Spark: the executed plan has a dynamic pruning subquery."""
    assert "dynamicpruningexpression(k" in _plan(tables, sql).lower()


def test_the_fetch_is_cancelled_at_its_deadline(tables):
    """The session's bounded run: a query that would take minutes is cancelled after a second."""
    import time

    from dbt.adapters.hiveopt.bounded_statements import run_bounded_on_session

    # A range stops at the next batch once cancelled (a cross join's tasks ran on for 5-25 s after
    # the cancel, holding the session's cores: the next statement waited for them).
    slow = "SELECT SUM(id % 7) AS n FROM range(0, 1000000000000)"
    started = time.perf_counter()
    with pytest.raises(TimeoutError):
        run_bounded_on_session(tables, slow, started + 1.0)
    assert time.perf_counter() - started < 30
    # The session is usable afterwards.
    assert tables.sql("SELECT 1 AS one").collect()[0][0] == 1


def test_a_bounded_statement_leaves_the_builds_description_on_its_thread(tables):
    """verify mode runs its bounded statements after the build was tagged with its description
    (build_records.tag: the actual rows are read from the plan of the jobs that carry it); the
    bounded run puts the thread's job properties back, so the build's own jobs still carry it."""
    import time

    from dbt.adapters.hiveopt.bounded_statements import run_bounded_on_session

    context = tables.sparkContext
    context.setLocalProperty("spark.job.description", "hiveopt build m 1")
    try:
        assert run_bounded_on_session(tables, "SELECT 1 AS one", time.perf_counter() + 60) == [(1,)]
        assert context.getLocalProperty("spark.job.description") == "hiveopt build m 1"
        assert context.getLocalProperty("spark.jobGroup.id") is None
    finally:
        context.setLocalProperty("spark.job.description", None)


def test_describe_reads_partition_columns(tables):
    """The adapter hands the rule the partition columns DESCRIBE TABLE EXTENDED lists."""
    from dbt.adapters.hiveopt.table_info import parse_describe

    def info(name):
        return parse_describe(name, [tuple(r) for r in tables.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()])

    assert info("prune_t.facts_by_k").partition_columns == ["k"]
    assert info("prune_t.facts").partition_columns == []


SEMI_JOIN = {
    "int key with NULL and duplicate keys, aggregated by it": (
        "SELECT a.k, a.total, d.c FROM (SELECT k, SUM(v) AS total, COUNT(*) AS n FROM prune_t.facts GROUP BY k) a "
        "JOIN prune_t.dims d ON a.k = d.k WHERE d.c = 'a'"
    ),
    "string key with quotes and backslashes, aggregated by it (table not declared sorted)": (
        "SELECT a.s, a.total FROM (SELECT s, SUM(v) AS total FROM prune_t.facts GROUP BY s) a "
        "JOIN prune_t.dims d ON a.s = d.s WHERE d.c IN ('a', 'b')"
    ),
    "null-supplying side of a LEFT join, small side in a CTE": (
        "WITH picked AS (SELECT k, c FROM prune_t.dims WHERE c <> 'a') "
        "SELECT p.k AS pk, p.c, a.total FROM picked p LEFT JOIN (SELECT k, SUM(v) AS total FROM prune_t.facts "
        "GROUP BY k) a "
        "ON a.k = p.k"
    ),
}


@pytest.mark.parametrize("title", list(SEMI_JOIN))
def test_without_values_a_broadcast_semi_join_goes_below_the_aggregate(tables, title):
    sql = SEMI_JOIN[title]
    result, rule = run_without_fetch(sql, sorted_keys={})
    assert rule.fired, [d.reason for d in rule.decisions]
    assert any("semi-join filter below the aggregate" in d.reason for d in rule.decisions if d.fired)
    expected = Counter(rows_of(tables, sql))
    assert expected and Counter(rows_of(tables, result.sql)) == expected
    plan = _plan(tables, result.sql)
    semi = [line for line in plan.splitlines() if "LeftSemi" in line]
    assert semi and all("BroadcastHashJoin" in line for line in semi), plan
    # Below the aggregate: the semi join is planned before the partial aggregate of the fact.
    lines = plan.splitlines()
    first_semi = next(i for i, line in enumerate(lines) if "LeftSemi" in line)
    partial = [i for i, line in enumerate(lines) if "HashAggregate" in line and "partial_sum" in line]
    assert partial and partial[-1] < first_semi, plan


def test_without_values_a_fact_read_as_is_is_left_to_spark(tables):
    sql = "SELECT f.k, f.v, d.c FROM prune_t.facts f JOIN prune_t.dims d ON f.k = d.k WHERE d.c = 'a'"
    result, rule = run_without_fetch(sql, sorted_keys={"prune_t.facts": ["k"]})
    assert not rule.fired and result.sql == sql
    assert any("no faster where the big side is read as is" in d.reason for d in rule.decisions), [
        d.reason for d in rule.decisions
    ]
