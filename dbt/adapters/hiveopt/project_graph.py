"""What the adapter reads from dbt's graph and node dicts (plain dicts, no dbt import): whether
other models read a node, and the table a model builds.

>>> own_table({"schema": "Analytics", "name": "daily_revenue"})
'analytics.daily_revenue'
"""

from __future__ import annotations

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
    if not model or not model.get("schema") or not (model.get("alias") or model.get("name")):
        return None
    return f"{model['schema']}.{model.get('alias') or model['name']}".lower()
