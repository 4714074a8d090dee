"""read_plan reads Spark's executed plan in one call (the graph's text); these check, on Spark, that
the text says what the status store's node and metric objects say, node by node: the same names,
the same tree, and each node's "number of output rows" (a node with a parent: the text carries a
node's rows on the edge to its parent)."""

from __future__ import annotations

import re

import pytest

from dbt.adapters.hiveopt.actual_rows import (
    jvm_sockets_without_nagle,
    latest_execution_id,
    py4j_sockets,
    read_plan,
    read_plans,
)

QUERIES = {
    "broadcast join under an aggregate": """
        SELECT d.n, count(*) FROM rp.f f JOIN rp.d d ON f.k = d.k WHERE f.id % 7 = 1 GROUP BY d.n""",
    "sort-merge join of two big sides": """
        SELECT /*+ MERGE(a) */ count(*) FROM rp.f a JOIN rp.f b ON a.id = b.id WHERE a.k < 50""",
    "union of two joins": """
        SELECT f.k, d.n FROM rp.f f JOIN rp.d d ON f.k = d.k WHERE f.k < 10
        UNION ALL SELECT f.k, d.n FROM rp.f f LEFT JOIN rp.d d ON f.k = d.k WHERE f.k >= 90""",
    # The graph's text shortens long names in the middle; read_plan takes them whole from the
    # node's description.
    "a table with a long name": """
        SELECT count(*) FROM rp.f f JOIN rp.dimension_with_a_name_long_enough_to_be_shortened d ON f.k = d.k""",
}


def _plan_through_objects(spark, description: str):
    """The reference: every node and metric through the status store's objects (the slow walk)."""
    store = spark._jsparkSession.sharedState().statusStore()
    executions = store.executionsList().iterator()
    chosen, size = None, -1
    while executions.hasNext():
        execution = executions.next()
        if execution.description() == description:
            graph = store.planGraph(execution.executionId())
            if graph.allNodes().size() >= size:
                chosen, size = (execution.executionId(), graph), graph.allNodes().size()
    execution_id, graph = chosen
    metrics = store.executionMetrics(execution_id)
    nodes, children = {}, {}
    walk = graph.allNodes().iterator()
    while walk.hasNext():
        node = walk.next()
        rows = None
        for_metric = node.metrics().iterator()
        while for_metric.hasNext():
            metric = for_metric.next()
            if metric.name() == "number of output rows" and metrics.get(metric.accumulatorId()).isDefined():
                rows = int(re.sub(r"[^0-9]", "", str(metrics.get(metric.accumulatorId()).get())))
        nodes[int(node.id())] = (str(node.name()), rows)
    edges = graph.edges().iterator()
    while edges.hasNext():
        edge = edges.next()
        children.setdefault(int(edge.toId()), []).append(int(edge.fromId()))
    return nodes, children


@pytest.fixture(scope="module")
def tables(spark):
    spark.sql("DROP DATABASE IF EXISTS rp CASCADE")
    spark.sql("CREATE DATABASE rp")
    spark.sql("CREATE TABLE rp.f USING parquet AS SELECT id, id % 100 AS k FROM range(200000)")
    spark.sql("CREATE TABLE rp.d USING parquet AS SELECT id AS k, cast(id AS string) AS n FROM range(80)")
    spark.sql("CREATE TABLE rp.dimension_with_a_name_long_enough_to_be_shortened USING parquet AS SELECT * FROM rp.d")
    yield
    spark.sql("DROP DATABASE rp CASCADE")


@pytest.mark.parametrize("title", sorted(QUERIES))
def test_the_graph_text_says_what_the_metrics_say(spark, tables, title):
    description = f"read_plan test {title}"
    context = spark.sparkContext
    context.setLocalProperty("spark.job.description", description)
    try:
        spark.sql(QUERIES[title]).collect()
    finally:
        context.setLocalProperty("spark.job.description", None)
    plan = read_plan(spark, description)
    nodes, children = _plan_through_objects(spark, description)
    assert {n: sorted(c) for n, c in plan.children.items()} == {n: sorted(c) for n, c in children.items()}
    parents = {c for cs in children.values() for c in cs}
    # The objects list WholeStageCodegen's clusters as nodes too; the text draws them as boxes
    # around their nodes, with no edges: they read no rows.
    operators = {n: name for n, (name, _) in nodes.items() if not name.startswith("WholeStageCodegen")}
    assert {n: name for n, (name, _) in plan.nodes.items()} == operators
    measured = {n: rows for n, (_, rows) in nodes.items() if n in parents and rows is not None}
    assert measured, "the query's nodes have row counts"
    assert {n: plan.nodes[n][1] for n in measured} == measured
    joins = [rows for name, rows in plan.nodes.values() if "Join" in name]
    assert joins and all(rows is not None for rows in joins)


def test_the_executions_since_a_noted_one_are_the_latest_so_many(spark, tables):
    """The adapter notes the latest execution before its first tagged build and sweeps only the
    executions since (ids count up by one): every build tagged after it is found, none before."""
    context = spark.sparkContext

    def tagged(description: str, sql: str) -> None:
        context.setLocalProperty("spark.job.description", description)
        try:
            spark.sql(sql).collect()
        finally:
            context.setLocalProperty("spark.job.description", None)

    tagged("window test before", "SELECT count(*) FROM rp.f f JOIN rp.d d ON f.k = d.k")
    noted = latest_execution_id(spark)
    tagged("window test first", "SELECT count(*) FROM rp.f f JOIN rp.d d ON f.k = d.k WHERE f.k < 5")
    spark.sql("SHOW TABLES IN rp").collect()  # statements in between are executions too
    tagged("window test second", "SELECT d.n, count(*) FROM rp.f f JOIN rp.d d ON f.k = d.k GROUP BY d.n")
    window = latest_execution_id(spark) - noted
    assert window >= 3
    wanted = ["window test before", "window test first", "window test second"]
    assert sorted(read_plans(spark, wanted, window)) == ["window test first", "window test second"]
    assert sorted(read_plans(spark, wanted)) == sorted(wanted)  # no window: all the session keeps


def test_a_plan_read_switches_nagle_off_on_the_jvm_end_of_every_py4j_connection(spark, tables):
    """A py4j answer longer than the JVM's 8 KB write buffer is written in two parts, and Nagle's
    algorithm held the second until the first was acknowledged, which the Python side delays by
    40 ms: each plan's text took 44 ms to arrive, 0.4 ms with TCP_NODELAY (py4j's own fix, its
    pull request 592, is not in the py4j 0.10.9.9 that pyspark 4.3 ships). A read switches it on
    for every connection there is."""
    description = "nagle test"
    spark.sparkContext.setLocalProperty("spark.job.description", description)
    try:
        spark.sql(QUERIES["union of two joins"]).collect()
    finally:
        spark.sparkContext.setLocalProperty("spark.job.description", None)
    assert read_plans(spark, [description])[description].nodes  # the read switches them (and reads)
    sockets = py4j_sockets(spark)
    assert len(sockets) >= 1 and all(socket.getTcpNoDelay() for socket in sockets)
    assert jvm_sockets_without_nagle(spark) == 0  # nothing left to switch
