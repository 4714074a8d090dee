"""Actual rows next to the estimates: after a model is built on the session, the row counts Spark
measured for the scans and joins of the query it ran (its SQL metrics, "number of output rows",
from the session's SQL status store: what Spark's UI shows for a query), attached to the model's
join tree with the q-error of each node, max(estimated / actual, actual / estimated). This is what
Hive's EXPLAIN ANALYZE gives: whether the estimates a decision rested on were right.

Matching: a scan node of the tree is a relation (a table, or a view whose base tables the record
lists); Spark's plan scans tables. A tree node is matched with the lowest node of Spark's plan that
reads exactly its set of tables (a scan: the filter above it, when there is one, since the tree's
scan estimate counts the rows after the relation's own filters; a join: Spark's join). A node whose
tables Spark reads elsewhere too (a table read twice), or not at all, gets no actual.

>>> plan = SparkPlan(
...     nodes={1: ("BroadcastHashJoin", 500), 2: ("Filter", 500), 3: ("Scan parquet spark_catalog.db.f", 100000),
...            4: ("Filter", 500), 5: ("Scan parquet spark_catalog.db.d", 1000)},
...     children={1: [2, 4], 2: [3], 4: [5]})
>>> tree = {"kind": "join", "rows": 450, "children": [
...     {"kind": "scan", "alias": "f", "relation": "db.f", "rows": 500},
...     {"kind": "scan", "alias": "d", "relation": "db.d", "rows": 400}]}
>>> attach_actuals(tree, plan, {})
>>> tree["actual_rows"], round(tree["q_error"], 2), tree["children"][1]["actual_rows"]
(500, 1.11, 500)
>>> worst_q_error({"root": tree})
1.25
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

JOINS = ("HashJoin", "SortMergeJoin", "NestedLoopJoin", "CartesianProduct")
# How many of the session's latest SQL executions are searched for a build's own (other threads
# run theirs meanwhile: a build of dbt's threads is a few executions; the window has room for many).
RECENT_EXECUTIONS = 200
SCAN = re.compile(r"^Scan \w+ (?:spark_catalog\.)?([\w.]+)$")


@dataclass
class SparkPlan:
    """Spark's executed plan of one query: node id -> (name, output rows or None), and each node's
    children."""

    nodes: dict[int, tuple[str, int | None]]
    children: dict[int, list[int]] = field(default_factory=dict)

    def tables(self, node: int) -> list[str]:
        """The tables scanned under `node`, with repeats (a table read twice is listed twice)."""
        name, _ = self.nodes[node]
        match = SCAN.match(name)
        own = [match.group(1).lower()] if match else []
        return own + [t for child in self.children.get(node, []) for t in self.tables(child)]


def read_plan(spark: Any, description: str) -> SparkPlan | None:
    """The plan and metrics of the last query the session ran under `description` (the job
    description the adapter set for the model's build), or None."""
    return read_plans(spark, [description], RECENT_EXECUTIONS).get(description)


def read_plans(spark: Any, descriptions: list[str], window: int | None = None) -> dict[str, SparkPlan]:
    """The plans of several builds in one sweep of the status store (`window`: only the latest
    so many executions; None: all Spark keeps, spark.sql.ui.retainedExecutions). A description
    with no execution left in the store is missing from the result."""
    store = spark._jsparkSession.sharedState().statusStore()
    jvm_sockets_without_nagle(spark)  # after a first call: this thread's connection exists
    wanted = set(descriptions)
    chosen: dict[str, tuple[int, Any, int]] = {}
    for execution in _recent_executions(store, window):
        description = execution.description()
        if description not in wanted:
            continue
        graph = store.planGraph(execution.executionId())
        count = graph.allNodes().size()
        if count >= chosen.get(description, (0, None, -1))[2]:  # the query, not the DDL around it
            chosen[description] = (execution.executionId(), graph, count)
    # One call for the whole graph with its metrics (the text Spark's UI draws the plan from):
    # walking the nodes and their metrics through py4j took 30-110 ms for a 25-node plan; the
    # text comes back in under a millisecond (44 ms with Nagle's algorithm on, see below).
    return {
        description: parse_dot(str(graph.makeDotFile(store.executionMetrics(execution_id))))
        for description, (execution_id, graph, _) in chosen.items()
    }


# In the graph's text, a node is `  7 [id="node7" label="HashAggregate" tooltip="..."];` and an edge
# from a child to its parent `  9->8 [label="14,286" labeltooltip="14,286 rows"];`: the label is
# the child's "number of output rows" (no label: it has no such metric, or it never ran). A long
# name is shortened in the middle ("Scan parquet spa...og.tpch.lineitem"); the tooltip, the node's
# description, holds it whole ("FileScan parquet spark_catalog.tpch.lineitem[l_orderkey#1L, ...").
_DOT_NODE = re.compile(r'^\s*(\d+) \[id="node\d+" label="((?:[^"\\]|\\.)*)"(?: tooltip="((?:[^"\\]|\\.)*)")?')
_DOT_EDGE = re.compile(r'^\s*(\d+)->(\d+)(?: \[label="([\d,]+)")?')


def parse_dot(text: str) -> SparkPlan:
    """A SparkPlan from the text of SparkPlanGraph.makeDotFile: node names, edges, and each node's
    output rows from the label of the edge to its parent.

    >>> plan = parse_dot('''digraph G {
    ...   0 [id="node0" label="BroadcastHashJoin" tooltip="BroadcastHashJoin [k#1L]"];
    ...   subgraph cluster1 {
    ...     1 [id="node1" label="Scan parquet spark_catalog.db.f" tooltip="..."];
    ...   }
    ...   2 [id="node2" label="Scan parquet spark_catalog.db.d" tooltip="..."];
    ...   1->0 [label="1,500" labeltooltip="1,500 rows"];
    ...   2->0;
    ... }''')
    >>> plan.nodes[0], plan.nodes[1], plan.nodes[2][1], plan.children
    (('BroadcastHashJoin', None), ('Scan parquet spark_catalog.db.f', 1500), None, {0: [1, 2]})
    """
    names: dict[int, str] = {}
    rows: dict[int, int] = {}
    children: dict[int, list[int]] = {}
    for line in text.splitlines():
        node = _DOT_NODE.match(line)
        if node:
            names[int(node.group(1))] = _whole_name(node.group(2), node.group(3) or "")
            continue
        edge = _DOT_EDGE.match(line)
        if edge:
            child, parent = int(edge.group(1)), int(edge.group(2))
            children.setdefault(parent, []).append(child)
            if edge.group(3):
                rows[child] = int(edge.group(3).replace(",", ""))
    return SparkPlan(nodes={n: (name, rows.get(n)) for n, name in names.items()}, children=children)


def _whole_name(label: str, tooltip: str) -> str:
    """The node's name, from its label, or from its description where the label was shortened.

    >>> _whole_name("Scan parquet spa...og.tpch.lineitem", "FileScan parquet spark_catalog.tpch.lineitem[a#1L]")
    'Scan parquet spark_catalog.tpch.lineitem'
    """
    label, tooltip = label.replace('\\"', '"'), tooltip.replace('\\"', '"')
    if "..." not in label:
        return label
    head, tail = label.split("...", 1)
    start = tooltip.find(head)
    end = tooltip.find(tail, start + len(head)) if start >= 0 else -1
    return tooltip[start : end + len(tail)] if end >= 0 else label


def jvm_sockets_without_nagle(spark: Any) -> int:
    """Switch Nagle's algorithm off (TCP_NODELAY) on the JVM's end of each py4j connection of the
    session's gateway; returns how many sockets it switched (0 also when it cannot, as on Spark
    Connect: the reads then take longer, nothing else changes).

    Why: py4j writes an answer longer than its 8 KB buffer in two parts, and with Nagle on, the
    JVM holds the second until the first is acknowledged, which Python's end delays by 40 ms.
    Each plan's text (14-45 KB for TPC-DS) took 44 ms to arrive whatever its size, 0.4 ms with
    TCP_NODELAY: the actual-rows read of 99 TPC-DS builds spent 4 s waiting on it. py4j sets
    TCP_NODELAY itself since its pull request 592 (2026), which pyspark 4.3's py4j 0.10.9.9
    predates. The connections are a private field of py4j's GatewayServer: read by reflection,
    and only switched, never closed or replaced. Small writes going out at once is all it changes
    for the session's other calls."""
    try:
        switched = 0
        for socket in py4j_sockets(spark):
            if socket is not None and not socket.getTcpNoDelay():
                socket.setTcpNoDelay(True)
                switched += 1
        return switched
    except Exception:  # another py4j, another gateway: the slow read stands
        return 0


def py4j_sockets(spark: Any) -> list[Any]:
    """The JVM's ends (java.net.Socket) of the session gateway's py4j connections: a private
    field of py4j's GatewayServer, read by reflection ([] when the gateway has none such)."""
    server = spark.sparkContext._gateway.java_gateway_server
    kind = server.getClass()
    while kind is not None and kind.getName() != "py4j.GatewayServer":
        kind = kind.getSuperclass()
    if kind is None:
        return []
    field = kind.getDeclaredField("connections")
    field.setAccessible(True)
    return [connection.getSocket() for connection in field.get(server).toArray()]  # a copy: threads connect meanwhile


def latest_execution_id(spark: Any) -> int:
    """The id of the session's latest SQL execution (-1: none yet). Ids count up by one per
    execution, so the executions since this one are the latest `latest_execution_id() - id`."""
    store = spark._jsparkSession.sharedState().statusStore()
    total = int(store.executionsCount())
    if not total:
        return -1
    # The count and the list are two reads of a store other threads' queries write to: the list
    # can come back empty (8 threads, 16 models: `next on empty iterator`). -1 then: a read that
    # starts from it sweeps every execution Spark keeps, as it did before ids were taken per build.
    latest = store.executionsList(total - 1, 1).iterator()
    return int(latest.next().executionId()) if latest.hasNext() else -1


def _recent_executions(store: Any, window: int | None) -> list[Any]:
    """The session's latest `window` SQL executions (None: all it keeps, up to
    spark.sql.ui.retainedExecutions, 1000)."""
    total = int(store.executionsCount())
    start = 0 if window is None else max(total - window, 0)
    executions = store.executionsList(start, total - start).iterator()
    out = []
    while executions.hasNext():
        out.append(executions.next())
    return out


def _relations(node: dict[str, Any]) -> list[str]:
    if node["kind"] == "scan":
        return [node.get("relation") or node.get("alias", "")]
    return [r for child in node["children"] for r in _relations(child)]


def _tables(relations: list[str], views: dict[str, list[str]], depth: int = 0) -> list[str]:
    out: list[str] = []
    for relation in relations:
        if relation in views and depth < 8:
            out += _tables(views[relation], views, depth + 1)
        else:
            out.append(relation)
    return out


def _lowest(plan: SparkPlan, tables: list[str], kinds: tuple[str, ...] | None) -> int | None:
    """The lowest plan node of the given kinds (None: a filter over a scan, or the scan) reading
    exactly `tables`, when the tables are read nowhere else in the plan."""
    wanted = sorted(tables)
    candidates = []
    for node, (name, rows) in plan.nodes.items():
        if rows is None or sorted(plan.tables(node)) != wanted:
            continue
        if kinds is None and (name == "Filter" or SCAN.match(name)):
            candidates.append(node)
        elif kinds is not None and any(k in name for k in kinds):
            candidates.append(node)
    if not candidates:
        return None
    # The one no other candidate sits below: the first node to read exactly these tables.
    below = {c: set(_descendants(plan, c)) for c in candidates}
    lowest = [c for c in candidates if not any(o in below[c] for o in candidates if o != c)]
    if kinds is None:  # a filter above the scan counts the rows the tree's scan estimates
        filters = [c for c in candidates if plan.nodes[c][0] == "Filter"]
        lowest = [c for c in filters if not any(o in below[c] for o in filters if o != c)] or lowest
    return lowest[0] if len(lowest) == 1 else None


def _descendants(plan: SparkPlan, node: int) -> list[int]:
    out = []
    for child in plan.children.get(node, []):
        out += [child] + _descendants(plan, child)
    return out


def attach_all(trees: dict[str, dict[str, Any]], plan: SparkPlan, views: dict[str, list[str]]) -> None:
    """attach_actuals for every block's tree. A UNION branch's tree (a skew split's, whose branches
    read the same tables) is matched within its own branch of Spark's Union: the k-th branch with
    joins in the query is the k-th child with joins of Spark's Unions, in plan order; when the
    counts differ, the branches get no actuals rather than another branch's.

    >>> plan = SparkPlan(
    ...     nodes={1: ("Union", 30), 2: ("BroadcastHashJoin", 10), 3: ("Scan parquet db.f", 10),
    ...            4: ("Scan parquet db.d", 1), 5: ("SortMergeJoin", 20), 6: ("Scan parquet db.f", 20),
    ...            7: ("Scan parquet db.d", 5)},
    ...     children={1: [2, 5], 2: [3, 4], 5: [6, 7]})
    >>> scan = lambda alias, table, rows: {"kind": "scan", "alias": alias, "relation": table, "rows": rows}
    >>> trees = {f"union branch {i}": {"kind": "join", "rows": rows, "children": [scan("f", "db.f", rows),
    ...     scan("d", "db.d", 1)]} for i, rows in ((1, 10), (2, 40))}
    >>> attach_all(trees, plan, {})
    >>> [(t["actual_rows"], t["q_error"]) for t in trees.values()]
    [(10, 1.0), (20, 2.0)]
    """
    branches = [label for label in trees if " branch " in label]
    subplans = _union_branches(plan)
    for label, tree in trees.items():
        if label not in branches:
            attach_actuals(tree, plan, views)
        elif len(subplans) == len(branches):
            attach_actuals(tree, subplans[branches.index(label)], views)


def _union_branches(plan: SparkPlan) -> list[SparkPlan]:
    """The children of Spark's Union nodes that hold a join, each as a plan of its own, in plan order."""
    out: list[SparkPlan] = []

    def walk(node: int) -> None:
        for child in plan.children.get(node, []):
            if plan.nodes[node][0] == "Union" and any(
                any(k in plan.nodes[n][0] for k in JOINS) for n in [child, *_descendants(plan, child)]
            ):
                own = {child, *_descendants(plan, child)}
                out.append(
                    SparkPlan(
                        nodes={n: plan.nodes[n] for n in own},
                        children={n: cs for n, cs in plan.children.items() if n in own},
                    )
                )
            walk(child)

    for root in sorted(_roots(plan)):
        walk(root)
    return out


def attach_actuals(tree: dict[str, Any], plan: SparkPlan, views: dict[str, list[str]]) -> None:
    """Add `actual_rows` and `q_error` to the nodes of `tree` that match a node of Spark's plan.
    `views`: relation -> what it reads, for the views the model read."""
    for child in tree.get("children") or []:
        attach_actuals(child, plan, views)
    tables = _tables(_relations(tree), views)
    if any(t.count(".") != 1 for t in tables):  # a CTE or derived table: not a catalog table
        return
    if sum(plan.tables(root).count(t) for root in _roots(plan) for t in set(tables)) != len(tables):
        return  # a table read elsewhere too, or not at all: ambiguous
    node = _lowest(plan, tables, JOINS if tree["kind"] == "join" else None)
    if node is None:
        return
    actual = plan.nodes[node][1]
    tree["actual_rows"] = actual
    if tree.get("rows") is not None and actual is not None:
        estimated, measured = max(float(tree["rows"]), 1.0), max(float(actual), 1.0)
        tree["q_error"] = round(max(estimated / measured, measured / estimated), 3)


def _roots(plan: SparkPlan) -> list[int]:
    children = {c for cs in plan.children.values() for c in cs}
    return [n for n in plan.nodes if n not in children]


def worst_q_error(trees: dict[str, dict[str, Any]]) -> float | None:
    """The largest q-error of any node of the trees, or None when none was measured."""
    worst = None

    def walk(node: dict[str, Any]) -> None:
        nonlocal worst
        if node.get("q_error") is not None:
            worst = node["q_error"] if worst is None else max(worst, node["q_error"])
        for child in node.get("children") or []:
            walk(child)

    for tree in trees.values():
        walk(tree)
    return worst
