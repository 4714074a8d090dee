"""Which columns of each relation the project's models use as keys: in a join condition (ON,
USING, or WHERE for comma joins) or a filter (WHERE), as a model asks for them
(optimizer.prepare.key_columns: a GROUP BY needs NDVs only), directly or through the views and
ephemeral models in between (a staging view's `o_orderkey as order_key` makes o_orderkey a key
where a mart joins on order_key). A first statistics pass details only these (heavy hitters, and
a histogram for those compared by range): the detail is the costly part of a pass (approx_top_k
and approx_percentile are not code-generated). Names only, not positions: a word used as a key
anywhere downstream of a relation is a key of it (a few columns too many, never one too few).

Pure functions over dbt's graph (plain dicts) and sqlglot; a model whose code does not parse
counts every word of it, as project_graph.words_downstream does.

>>> graph = {"sources": {"source.p.tpch.orders": {"resource_type": "source", "schema": "tpch",
...                                              "identifier": "orders"}},
...          "nodes": {"model.p.stg": {"resource_type": "model", "schema": "a", "name": "stg",
...                                    "config": {"materialized": "view"},
...                                    "raw_code": "select o_orderkey as order_key, o_clerk as clerk, "
...                                                "o_comment from {{ source('tpch', 'orders') }}",
...                                    "depends_on": {"nodes": ["source.p.tpch.orders"]}},
...                    "model.p.mart": {"resource_type": "model", "schema": "a", "name": "mart",
...                                     "raw_code": "select clerk, count(*) from {{ ref('stg') }} s "
...                                                 "join {{ ref('x') }} x on x.k = s.order_key "
...                                                 "where s.clerk <> 'a' group by clerk",
...                                     "depends_on": {"nodes": ["model.p.stg"]}}}}
>>> keys, ranges = key_words_downstream(graph)
>>> sorted(keys["tpch.orders"] & {"o_orderkey", "o_clerk", "o_comment"}), ranges["tpch.orders"]
(['o_clerk', 'o_orderkey'], set())
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp, parse_one
from sqlglot.errors import SqlglotError

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.project_graph import _READERS, _THROUGH, WORD, relation_name, sql_of_code

# Comparisons whose columns a histogram serves (selectivity._fraction_below); equalities and
# join keys are served by NDVs and heavy hitters.
_RANGES = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)


class _Code:
    """One model's code, parsed once: the words it uses as keys, those of them it compares by
    range, and for each name it projects, the names its expression reads (to follow a key up
    through a view's aliases)."""

    def __init__(self, raw_code: str) -> None:
        self.words = {w.lower() for w in WORD.findall(raw_code)}
        self.own: dict[str, set[str]] = {"keys": set(), "ranges": set()}
        self.projected: dict[str, set[str]] = {}
        self.parsed = False
        try:
            tree = parse_one(sql_of_code(raw_code), dialect=DIALECT)
        except (SqlglotError, ValueError, RecursionError):
            return
        self.parsed = tree is not None
        for node in tree.walk() if tree is not None else ():
            if isinstance(node, exp.Where):  # filters, and comma joins' conditions
                self._conditions(node)
            elif isinstance(node, exp.Join):
                if node.args.get("on") is not None:
                    self._conditions(node.args["on"])
                for name in node.args.get("using") or []:  # identifiers (or columns)
                    self.own["keys"] |= _names(name) | {name.name.lower()}
            elif isinstance(node, exp.Select):
                for projection in node.selects:
                    name = projection.alias_or_name.lower()
                    if name:
                        self.projected.setdefault(name, set()).update(_names(projection))

    def _conditions(self, node: exp.Expression) -> None:
        # The columns of this SELECT's condition, not those a subquery in it selects (the
        # subquery's own WHERE is visited too), as the model's own statistics ask for them.
        self.own["keys"] |= _level_names(node)
        for comparison in node.find_all(*_RANGES):
            self.own["ranges"] |= _level_names(comparison)

    def reads_as(self, kind: str, wanted: set[str]) -> set[str]:
        """The names this model reads as `kind` ("keys", "ranges"): its own, and those behind
        the names it projects that models downstream use so (`wanted`), through its CTEs and
        derived tables."""
        if not self.parsed:
            return set(self.words)
        found = self.own[kind] | wanted
        for _ in range(8):  # CTE over CTE: a few rounds reach every level of a model
            more = set().union(*(self.projected.get(name, set()) for name in found)) - found
            if not more:
                break
            found |= more
        return found


def _names(node: exp.Expression) -> set[str]:
    return {column.name.lower() for column in node.find_all(exp.Column) if column.name}


def _level_names(node: exp.Expression) -> set[str]:
    """Names of the columns in `node` that belong to its own SELECT (not to a subquery's)."""
    level = node.find_ancestor(exp.Select)
    return {c.name.lower() for c in node.find_all(exp.Column) if c.name and c.find_ancestor(exp.Select) is level}


def key_words_downstream(graph: dict[str, Any]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Per relation (`db.table`), the column names the project's models and snapshots use of it
    as keys, and those they compare by range (<, >, BETWEEN: the columns a histogram serves),
    directly or through models in between (see the module's docstring)."""
    nodes = {**(graph.get("sources") or {}), **(graph.get("nodes") or {})}
    readers: dict[str, list[str]] = {}
    for unique_id, node in nodes.items():
        if node.get("resource_type") in _READERS:
            for parent in (node.get("depends_on") or {}).get("nodes") or []:
                readers.setdefault(parent, []).append(unique_id)
    codes: dict[str, _Code] = {}

    def downstream(kind: str) -> dict[str, set[str]]:
        read_as: dict[str, set[str]] = {}

        def read_by(unique_id: str, trail: frozenset[str]) -> set[str]:
            """What `unique_id` (a model) reads as `kind` of the relations it reads."""
            if unique_id not in read_as:
                if unique_id in trail:  # a malformed, cyclic graph
                    return set()
                # Through a view or an ephemeral model, its readers' keys are keys of what it
                # reads; a model that holds data has statistics of its own.
                through = (nodes[unique_id].get("config") or {}).get("materialized") in _THROUGH
                wanted = used_of(unique_id, trail | {unique_id}) if through else set()
                if unique_id not in codes:
                    codes[unique_id] = _Code(str(nodes[unique_id].get("raw_code") or ""))
                read_as[unique_id] = codes[unique_id].reads_as(kind, wanted)
            return read_as[unique_id]

        def used_of(unique_id: str, trail: frozenset[str] = frozenset()) -> set[str]:
            """The names of `unique_id`'s columns that the models reading it use as `kind`."""
            return set().union(*(read_by(reader, trail) for reader in readers.get(unique_id, [])))

        found: dict[str, set[str]] = {}
        for unique_id, node in nodes.items():
            name = relation_name(node)
            if name and unique_id in readers:
                found.setdefault(name, set()).update(used_of(unique_id))
        return found

    return downstream("keys"), downstream("ranges")
