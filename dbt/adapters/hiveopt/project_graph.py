"""What the adapter reads from dbt's graph and node dicts (plain dicts, no dbt import): whether
other models read a node, and the table a model builds.

>>> own_table({"schema": "Analytics", "name": "daily_revenue"})
'analytics.daily_revenue'
"""

from __future__ import annotations

import re
from typing import Any

# Nodes that read a model through ref() and are built from it (tests only read, and cheaply).
_READERS = ("model", "snapshot")


def read_by_models(graph: dict[str, Any], unique_id: str) -> bool:
    """Whether a model or snapshot of dbt's graph depends on the node `unique_id`.

    >>> graph = {"nodes": {"model.p.b": {"resource_type": "model", "depends_on": {"nodes": ["model.p.a"]}},
    ...                    "test.p.t": {"resource_type": "test", "depends_on": {"nodes": ["model.p.b"]}}}}
    >>> read_by_models(graph, "model.p.a"), read_by_models(graph, "model.p.b")
    (True, False)
    """
    return any(
        node.get("resource_type") in _READERS and unique_id in ((node.get("depends_on") or {}).get("nodes") or ())
        for node in (graph.get("nodes") or {}).values()
    )


def own_table(model: dict[str, Any] | None) -> str | None:
    """`db.table` the model builds (an incremental model reads it in its is_incremental() filter)."""
    return relation_name(model) if model else None


# A word of SQL: what a column name looks like in a model's code.
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def relation_name(node: dict[str, Any]) -> str | None:
    """`db.table` of a source, seed, model or snapshot of dbt's graph (Spark: schema = database).

    >>> relation_name({"resource_type": "source", "schema": "tpch", "identifier": "Orders"})
    'tpch.orders'
    """
    name = node.get("identifier") if node.get("resource_type") == "source" else node.get("alias") or node.get("name")
    return f"{node['schema']}.{name}".lower() if node.get("schema") and name else None


def words_downstream(graph: dict[str, Any]) -> dict[str, set[str]]:
    """Per relation (`db.table`), the words in the code of every model and snapshot that reads it,
    directly or through other models (views, ephemerals): the column names the project may use
    of it. A first statistics pass over a table reads the columns named here, so that the next
    model does not pay a narrow pass of its own for them (one per table and model: 0.1-0.4 s
    each, 2.9 s of the 10 s a first TPC-H SF 1 build spent on statistics).

    >>> graph = {"sources": {"source.p.tpch.orders": {"resource_type": "source", "schema": "tpch",
    ...                                              "identifier": "orders"}},
    ...          "nodes": {"model.p.stg": {"resource_type": "model", "schema": "a", "name": "stg",
    ...                                    "raw_code": "select o_orderkey as k from {{ source('tpch', 'orders') }}",
    ...                                    "depends_on": {"nodes": ["source.p.tpch.orders"]}},
    ...                    "model.p.mart": {"resource_type": "model", "schema": "a", "name": "mart",
    ...                                     "raw_code": "select k, o_clerk from {{ ref('stg') }}",
    ...                                     "depends_on": {"nodes": ["model.p.stg"]}}}}
    >>> sorted(words_downstream(graph)["tpch.orders"] & {"o_orderkey", "o_clerk", "o_comment"})
    ['o_clerk', 'o_orderkey']
    """
    nodes = {**(graph.get("sources") or {}), **(graph.get("nodes") or {})}
    upstream: dict[str, set[str]] = {}

    def above(unique_id: str) -> set[str]:
        """Every node `unique_id` reads, directly or not (dbt's graph is acyclic; the empty set
        put first only guards against a malformed one)."""
        if unique_id not in upstream:
            upstream[unique_id] = set()
            parents = ((nodes.get(unique_id) or {}).get("depends_on") or {}).get("nodes") or []
            upstream[unique_id] = {p for p in parents if p in nodes}.union(*(above(p) for p in parents if p in nodes))
        return upstream[unique_id]

    words: dict[str, set[str]] = {}
    for unique_id, node in nodes.items():
        if node.get("resource_type") not in _READERS or not node.get("raw_code"):
            continue
        said = {word.lower() for word in _WORD.findall(node["raw_code"])}
        for parent in above(unique_id):
            name = relation_name(nodes[parent])
            if name:
                words.setdefault(name, set()).update(said)
    return words
