"""`dbt build` of the example project through hiveopt, on the local session, and on a Spark
standalone cluster that the tests start from the pyspark package (a master, two workers, one SQL
server application): over Thrift and over Spark Connect. The marts built on the cluster hold the
rows the session built."""

import json
import os
import time
from collections import Counter

import pytest
from helpers.dbt_run import EXAMPLE, Events, run_dbt
from helpers.results import comparable, rows_of

from dbt.adapters.hiveopt.impl import SLOTS_NOT_ASKED

pytestmark = pytest.mark.integration

# The example project's marts (tables, the incremental model and a view), compared across methods.
MARTS = sorted(name[:-4] for name in os.listdir(os.path.join(EXAMPLE, "models", "marts")) if name.endswith(".sql"))


def build(target, tmp_path, events=None):
    target_path = str(tmp_path / "target")
    result = run_dbt(
        [
            "build",
            "--project-dir",
            EXAMPLE,
            "--profiles-dir",
            EXAMPLE,
            "--target",
            target,
            "--target-path",
            target_path,
            "--log-path",
            str(tmp_path / "logs"),
        ],
        events,
    )
    return result, os.path.join(target_path, "hiveopt")


def check_build(result, report_dir):
    assert result.success, [
        (r.node.name, r.status, r.message) for r in result.result.results if str(r.status) not in ("pass", "success")
    ]
    statuses = Counter(str(r.status) for r in result.result.results)
    assert statuses["error"] == 0 and statuses["fail"] == 0
    assert statuses["pass"] >= 20  # schema tests, the singular test and the unit test
    with open(os.path.join(report_dir, "revenue_by_nation.json")) as handle:
        record = json.load(handle)
    # TPC-H Q5 over staging views: reordered through them. At SF 0.1 every dimension is small on
    # disk: Spark broadcasts each by itself, and the join-algorithm rule says so instead of hinting.
    assert record["fired_rules"] == ["reorder_joins"]
    algorithms = [d for r in record["rules"] if r["rule"] == "select_join_algorithms" for d in r["decisions"]]
    assert algorithms and all(d["reason"].startswith("Spark does this already") for d in algorithms), algorithms
    assert "BROADCAST(" not in open(os.path.join(report_dir, "revenue_by_nation.sql")).read()
    assert record["statistics_used"]["analytics.stg_orders"]["precision"] == "exact"  # a view over tpch.orders
    assert record["statistics_used"]["analytics.stg_nations"]["precision"] == "exact"  # a view over a seed
    assert record["statistics_gathering"]["analytics.stg_nations"]["state"] == (
        "view: estimated through its definition over analytics.nations"
    )
    # No model reads the mart: no statistics job after its build (gathered on first read instead).
    assert record["after_build_statistics"]["analytics.revenue_by_nation"]["gathered"] is False
    with open(os.path.join(report_dir, "seed.nations.json")) as handle:
        cost = json.load(handle)["after_build_statistics"]["analytics.nations"]  # a seed, read by a view
    # Counted in Python from the rows dbt loaded, no pass over the table (the view over it is exact,
    # above), when a model first reads them or behind the build: the seed's own build only holds
    # them, and its record says so next to the load's time.
    assert cost["how"].startswith("counted from the rows dbt loaded") and cost["build_seconds"] > 0
    assert cost["gather_seconds"] < 0.05, cost
    assert abs(cost["cost_ratio"] - cost["gather_seconds"] / cost["build_seconds"]) < 0.01
    # A staging view reads one table: nothing to rewrite, no I/O, the SQL as written.
    with open(os.path.join(report_dir, "stg_orders.json")) as handle:
        assert json.load(handle)["unchanged_reason"] == "no join or subquery"
    # The view with a join is optimized too; the outer join keeps its preserved side.
    assert os.path.exists(os.path.join(report_dir, "customer_orders.sql"))
    # The unit test's empty table for its column types runs as written, the optimizer not asked.
    with open(os.path.join(report_dir, "unit_test.brand_revenue_keeps_one_brand.json")) as handle:
        unit = json.load(handle)
    assert unit["unchanged_reason"] == "a unit test's column-types table (no rows)" and unit["optimizer_ms"] == 0
    return record


def mart_rows(fetch):
    """{mart: Counter of its rows} read with `fetch(sql) -> rows` (floats rounded)."""
    return {name: Counter(comparable(fetch(f"SELECT * FROM analytics.{name}"))) for name in MARTS}


def passed(result):
    return Counter(str(r.status) for r in result.result.results)


@pytest.fixture(scope="module")
def session_build(spark, tpch_dir, tmp_path_factory):
    """The example project built once on the local session: (result, report folder, events,
    seconds, the marts' rows) for the session's test and as the reference of the cluster's.
    The project's databases are dropped first: the rule fixtures' tables (tests/spark) have a
    `tpch` database of their own, which the project's on-run-start would otherwise keep (it
    registers its sources only where they do not exist)."""
    for database in ("tpch", "analytics"):
        spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")  # the sources' Parquet stays
    events = Events()
    started = time.perf_counter()
    result, report_dir = build("session", tmp_path_factory.mktemp("session-build"), events)
    seconds = time.perf_counter() - started
    rows = mart_rows(lambda sql: [tuple(r) for r in spark.sql(sql).collect()]) if result.success else {}
    print(f"dbt build on the session: {dict(passed(result))} in {seconds:.1f} s")
    return result, report_dir, events, seconds, rows


def test_build_on_local_session(spark, session_build):
    result, report_dir, events, _, _ = session_build
    record = check_build(result, report_dir)
    assert events.matching("hiveopt adapter: revenue_by_nation: reorder_joins (")
    (line,) = events.matching("models: ")  # the run's closing line
    assert "13 models: " in line and "no join or subquery" in line and "0 fell back" in line, line
    # What Spark stored equals what the model as written returns.
    stored = rows_of(spark, "SELECT nation_name, revenue, line_count FROM analytics.revenue_by_nation")
    written = rows_of(spark, record["original_sql"])
    assert Counter(stored) == Counter(written) and len(stored) == 5
    # Statistics live in the warehouse, for the next run and other machines.
    stored_stats = spark.sql("SELECT DISTINCT table_name FROM hiveopt.table_statistics").collect()
    # Seeds as they load; sources on first read (through the staging views); never a view; not
    # the marts, which no model reads.
    names = {r[0] for r in stored_stats}
    assert {"analytics.nations", "analytics.regions", "tpch.lineitem", "tpch.orders"} <= names
    assert not [n for n in names if n.startswith("analytics.stg_")] and "analytics.revenue_by_nation" not in names
    # Spark's actual rows next to the estimates: read from the build's SQL metrics, through the views.
    with open(os.path.join(report_dir, "revenue_by_nation.json")) as handle:
        measured = json.load(handle)
    assert measured["actual_rows"] == "measured by Spark" and measured["worst_q_error"] >= 1.0
    scans = {}

    def walk(node):
        if node["kind"] == "scan":
            scans[node["relation"]] = node
        for child in node.get("children") or []:
            walk(child)

    walk(measured["join_trees"]["chosen"]["root"])
    lineitem = spark.sql("SELECT COUNT(*) FROM tpch.lineitem").collect()[0][0]
    assert scans["analytics.stg_lineitem"]["actual_rows"] == lineitem
    assert all("q_error" in node for node in scans.values()), scans


def check_cluster_build(method, result, report_dir, seconds, session_build, fetch):
    """A build on the cluster: the session's checks, the same statuses, and the marts' rows
    equal to the session's; the cluster not asked for its task slots (no rule of the model needs them)."""
    record = check_build(result, report_dir)
    print(f"dbt build on {method}-on-cluster: {dict(passed(result))} in {seconds:.1f} s")
    assert passed(result) == passed(session_build[0])
    assert mart_rows(fetch) == session_build[4]
    # Actual rows come from the embedded session's SQL metrics: elsewhere the record says so.
    assert record["actual_rows"].startswith(f"not available on the {method} connection"), record["actual_rows"]
    # No hot key in the example's joins: the cluster is not asked for its task slots (a Spark job,
    # test_connections asks it).
    assert record["task_slots"] == {"value": None, "from": SLOTS_NOT_ASKED}, record["task_slots"]
    return record


@pytest.mark.thrift
def test_build_on_thrift_on_cluster(tpch_dir, tmp_path, monkeypatch, thrift_server, session_build):
    from pyhive import hive

    monkeypatch.setenv("HIVEOPT_THRIFT_PORT", str(thrift_server.port))
    started = time.perf_counter()
    result, report_dir = build("thrift", tmp_path)
    seconds = time.perf_counter() - started
    with hive.connect(host=thrift_server.host, port=thrift_server.port, username="dbt") as connection:
        cursor = connection.cursor()

        def fetch(sql):
            cursor.execute(sql)
            return cursor.fetchall()

        check_cluster_build("thrift", result, report_dir, seconds, session_build, fetch)


@pytest.mark.connect
def test_build_on_connect_on_cluster(tpch_dir, tmp_path, monkeypatch, connect_server, session_build):
    from dbt.adapters.hiveopt.spark_connect import open_session

    monkeypatch.setenv("HIVEOPT_CONNECT_PORT", str(connect_server.port))
    started = time.perf_counter()
    result, report_dir = build("connect", tmp_path)
    seconds = time.perf_counter() - started
    session = open_session(connect_server.host, connect_server.port, None, False, {})
    try:
        check_cluster_build(
            "connect",
            result,
            report_dir,
            seconds,
            session_build,
            lambda sql: [tuple(r) for r in session.sql(sql).collect()],
        )
    finally:
        session.stop()
