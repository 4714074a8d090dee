"""`dbt build` of the example project through hiveopt, on the local session and on a Spark
Thrift server that the test starts from the pyspark package."""

import json
import os
from collections import Counter

import pytest
from helpers.dbt_run import EXAMPLE, Events, run_dbt
from helpers.results import rows_of

pytestmark = pytest.mark.integration


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
    # Counted in Python from the rows dbt loaded (milliseconds, may round to 0.0): less than the load.
    assert 0 <= cost["gather_seconds"] < cost["build_seconds"]
    # A staging view reads one table: nothing to rewrite, no I/O, the SQL as written.
    with open(os.path.join(report_dir, "stg_orders.json")) as handle:
        assert json.load(handle)["unchanged_reason"] == "no join or subquery"
    # The view with a join is optimized too; the outer join keeps its preserved side.
    assert os.path.exists(os.path.join(report_dir, "customer_orders.sql"))
    assert os.path.exists(os.path.join(report_dir, "unit_test.brand_revenue_keeps_one_brand.json"))
    return record


def test_build_on_local_session(spark, tpch_dir, tmp_path):
    events = Events()
    result, report_dir = build("session", tmp_path, events)
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


@pytest.mark.thrift
def test_build_on_thrift_server(spark, tpch_dir, tmp_path, monkeypatch, thrift_server):
    monkeypatch.setenv("HIVEOPT_THRIFT_PORT", str(thrift_server.port))
    result, report_dir = build("thrift", tmp_path)
    record = check_build(result, report_dir)
    # Actual rows come from the embedded session's SQL metrics: on Thrift the record says so.
    assert record["actual_rows"].startswith("not available on the thrift connection"), record["actual_rows"]
