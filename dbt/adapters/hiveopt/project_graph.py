"""What the adapter reads from dbt's graph and node dicts (plain dicts, no dbt import): whether
other models read a node, and the table a model builds.

>>> own_table({"schema": "Analytics", "name": "daily_revenue"})
'analytics.daily_revenue'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.single_relation import AFTER_FROM, reads_one_relation

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


def seed_files(graph: dict[str, Any]) -> dict[str, str]:
    """`db.table` of each seed of dbt's graph -> the checksum dbt keeps of its file.

    >>> seed_files({"nodes": {"seed.p.n": {"resource_type": "seed", "schema": "a", "alias": "N",
    ...     "checksum": {"name": "sha256", "checksum": "ab12"}}}})
    {'a.n': 'ab12'}
    """
    files = {}
    for node in (graph.get("nodes") or {}).values():
        checksum = seed_file(node)
        if checksum and relation_name(node):
            files[relation_name(node)] = checksum
    return files


def seed_file(node: dict[str, Any] | None) -> str | None:
    """The checksum dbt keeps of a seed's file (None: not a seed, or none kept)."""
    if not node or node.get("resource_type") != "seed":
        return None
    checksum = (node.get("checksum") or {}).get("checksum")
    return str(checksum) if checksum else None


# A word of SQL: what a column name looks like in a model's code.
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
        said = {word.lower() for word in WORD.findall(node["raw_code"])}
        for parent in above(unique_id):
            name = relation_name(nodes[parent])
            if name:
                words.setdefault(name, set()).update(said)
    return words


# Materializations that hold no data of their own: statistics are those of what they read.
_THROUGH = ("view", "ephemeral")
_JINJA = re.compile(r"\{#.*?#\}|\{%.*?%\}", re.S)
_JINJA_VALUE = re.compile(r"\{\{.*?\}\}", re.S)
_CONFIG = re.compile(r"\{\{\s*config\s*\(.*?\}\}", re.S)


# The unique_id given to a table a model names in its code and dbt's graph does not know.
NAMED_IN_CODE = "source.hiveopt.named_in_code"
_NAME_PART = (TokenType.VAR, TokenType.IDENTIFIER)


def tables_named(sql: str) -> set[str]:
    """The tables a query names as `db.table` (or `catalog.db.table`) after FROM, JOIN or a comma
    of a FROM clause, read from its tokens: what a model that names its tables rather than
    ref() or source() them reads. One-part names (CTEs, the current database's tables) and the
    FROM of a function (EXTRACT(YEAR FROM o.d)) are left out.

    >>> sorted(tables_named("with c as (select * from db.a) select * from c join db.B b on c.k = b.k, "
    ...                     "spark_catalog.db.c where extract(year from c.d) > 1 and c.k in (select k from db.d)"))
    ['db.a', 'db.b', 'db.c', 'db.d']
    """
    try:
        tokens = DIALECT().tokenize(sql)
    except (SqlglotError, ValueError):
        return set()
    named: set[str] = set()
    depth = 0
    selects: set[int] = set()  # the depths where a SELECT has started (a FROM there is a query's)
    froms: set[int] = set()  # the depths where a FROM clause is open (a derived table opens another)
    expect = False  # the next tokens name a relation
    i = 0
    while i < len(tokens):
        kind = tokens[i].token_type
        if expect and kind in _NAME_PART:
            parts = [tokens[i].text]
            while (
                i + 2 < len(tokens)
                and tokens[i + 1].token_type == TokenType.DOT
                and tokens[i + 2].token_type in _NAME_PART
            ):
                parts.append(tokens[i + 2].text)
                i += 2
            if len(parts) >= 2:
                named.add(".".join(parts[-2:]).lower())
            expect = False
            i += 1
            continue
        expect = False
        if kind == TokenType.SELECT:
            selects.add(depth)
            froms.discard(depth)
        elif kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            selects.discard(depth)
            froms.discard(depth)
            depth -= 1
        elif kind == TokenType.FROM and depth in selects:
            froms.add(depth)
            expect = True
        elif kind == TokenType.JOIN or (kind == TokenType.COMMA and depth in froms):
            expect = True
        elif kind in _AFTER_FROM_CLAUSE:
            froms.discard(depth)
        i += 1
    return named


# Clauses that end a FROM clause (a comma after them is not a join), and the set operations.
_AFTER_FROM_CLAUSE = AFTER_FROM | {TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT}


def with_tables_named_in_code(graph: dict[str, Any]) -> dict[str, Any]:
    """dbt's graph with the tables models and snapshots name in their code (`db.table`, not
    through ref() or source(): tables_named) added to what they depend on: the node of that
    name where the graph has one, else a source of its own (NAMED_IN_CODE). Every reading of the
    graph (the columns a first pass reads, key columns, the tables of the first pass, input
    sizes) then sees them as it sees sources. A model that names its tables had every number and
    date column of them detailed with a histogram, each table in a pass of its own: on TPC-DS SF 1
    (99 models, threads 1) statistics were 15% of the first build against 8.5% with source().
    The graph given is not changed.

    >>> graph = {"nodes": {"model.p.m": {"resource_type": "model", "raw_code": "select * from s.t join a.x on k = j",
    ...                                  "depends_on": {"nodes": []}},
    ...                    "model.p.x": {"resource_type": "model", "schema": "a", "name": "x"}}}
    >>> g = with_tables_named_in_code(graph)
    >>> g["nodes"]["model.p.m"]["depends_on"]["nodes"], relation_name(g["sources"][NAMED_IN_CODE + ".s.t"])
    (['model.p.x', 'source.hiveopt.named_in_code.s.t'], 's.t')
    >>> graph["nodes"]["model.p.m"]["depends_on"]["nodes"]
    []
    """
    nodes = {**(graph.get("sources") or {}), **(graph.get("nodes") or {})}
    known = {name: uid for uid, node in nodes.items() if (name := relation_name(node))}
    added_nodes: dict[str, Any] = {}
    added_sources: dict[str, Any] = {}
    for unique_id, node in (graph.get("nodes") or {}).items():
        if node.get("resource_type") not in _READERS or not node.get("raw_code") or node.get("language") == "python":
            continue
        parents = list((node.get("depends_on") or {}).get("nodes") or [])
        for name in sorted(tables_named(sql_of_code(str(node["raw_code"])))):
            parent = known.get(name)
            if parent is None:
                schema, table = name.split(".", 1)
                parent = f"{NAMED_IN_CODE}.{name}"
                added_sources[parent] = {"resource_type": "source", "schema": schema, "identifier": table}
            if parent not in parents and parent != unique_id:
                parents.append(parent)
        if len(parents) > len((node.get("depends_on") or {}).get("nodes") or []):
            added_nodes[unique_id] = {**node, "depends_on": {**(node.get("depends_on") or {}), "nodes": parents}}
    if not added_nodes:
        return graph
    return {
        **graph,
        "sources": {**(graph.get("sources") or {}), **added_sources},
        "nodes": {**(graph.get("nodes") or {}), **added_nodes},
    }


def sql_of_code(raw_code: str) -> str:
    """A model's code (Jinja and all) as SQL to read: comments, tags and config() calls dropped
    (a tag's body kept: an is_incremental() filter counts), other values ({{ ref('x') }},
    {{ var('d') }}) a name.

    >>> sql_of_code("{{ config(materialized='view') }} select a from {{ ref('x') }} {% if y %}where b{% endif %}")
    '  select a from  x   where b '
    """
    return _JINJA_VALUE.sub(" x ", _JINJA.sub(" ", _CONFIG.sub(" ", raw_code)))


def may_use_statistics(raw_code: str) -> bool:
    """Whether a model's code (Jinja and all) may give a rule something to do: anything but one
    SELECT over one relation, read from `sql_of_code`.

    >>> may_use_statistics("select a from {{ ref('x') }} where d > '{{ var('d') }}'")
    False
    >>> may_use_statistics("select a from {{ ref('x') }} x join {{ ref('y') }} y on x.k = y.k")
    True
    >>> may_use_statistics("select a from {{ ref('x') }} {% if is_incremental() %} "
    ...                    "where a > (select max(a) from {{ this }}) {% endif %}")
    True
    """
    return not reads_one_relation(sql_of_code(raw_code))


def read_unbuilt(graph: dict[str, Any], selected: Iterable[str]) -> tuple[list[str], list[str]]:
    """What the selected table and incremental models of an invocation that may use statistics
    read and the invocation does not build (`db.table`): the tables (sources, seeds, models that
    hold data), whose statistics they may use, and the views in between (walked through, as
    ephemeral models are, down to tables). Those the invocation builds (selected) are left out:
    their catalog entry changes with their build, and their statistics are gathered after it.

    >>> graph = {"sources": {"source.p.s.orders": {"resource_type": "source", "schema": "s", "identifier": "orders"},
    ...                      "source.p.s.items": {"resource_type": "source", "schema": "s", "identifier": "items"}},
    ...          "nodes": {
    ...   "seed.p.codes": {"resource_type": "seed", "schema": "a", "name": "codes", "config": {}},
    ...   "model.p.stg": {"resource_type": "model", "schema": "a", "name": "stg", "config": {"materialized": "view"},
    ...                   "raw_code": "select * from x", "depends_on": {"nodes": ["source.p.s.orders"]}},
    ...   "model.p.mart": {"resource_type": "model", "schema": "a", "name": "mart", "config": {"materialized": "table"},
    ...                    "raw_code": "select * from a join b on a.k = b.k",
    ...                    "depends_on": {"nodes": ["model.p.stg", "seed.p.codes"]}},
    ...   "model.p.flat": {"resource_type": "model", "schema": "a", "name": "flat", "config": {"materialized": "table"},
    ...                    "raw_code": "select * from x", "depends_on": {"nodes": ["source.p.s.items"]}}}}
    >>> read_unbuilt(graph, ["model.p.mart", "model.p.flat", "model.p.stg"])
    (['a.codes', 's.orders'], [])
    >>> read_unbuilt(graph, ["model.p.mart"])
    (['a.codes', 's.orders'], ['a.stg'])
    """
    nodes = {**(graph.get("sources") or {}), **(graph.get("nodes") or {})}
    chosen = set(selected)
    tables: set[str] = set()
    views: set[str] = set()
    seen: set[str] = set()

    def below(unique_id: str) -> None:
        for parent in ((nodes.get(unique_id) or {}).get("depends_on") or {}).get("nodes") or []:
            if parent in seen or parent not in nodes:
                continue
            seen.add(parent)
            node = nodes[parent]
            name = relation_name(node)
            materialized = (node.get("config") or {}).get("materialized")
            if node.get("resource_type") == "model" and materialized in _THROUGH:
                if materialized == "view" and parent not in chosen and name:
                    views.add(name)
                below(parent)
            elif parent not in chosen and node.get("resource_type") in ("source", "seed", "model", "snapshot"):
                if name:
                    tables.add(name)

    for unique_id in chosen:
        node = nodes.get(unique_id) or {}
        if node.get("resource_type") != "model":
            continue
        if (node.get("config") or {}).get("materialized") not in ("table", "incremental"):
            continue
        if may_use_statistics(str(node.get("raw_code") or "")):
            below(unique_id)
    return sorted(tables), sorted(views)


def tables_read(graph: dict[str, Any], unique_id: str) -> list[str]:
    """The tables (`db.table`: sources, seeds, models that hold data, snapshots) a node reads,
    directly or through views and ephemeral models: what its build's input size is the size of,
    known without reading the catalog for the views.

    >>> graph = {"sources": {"source.p.s.orders": {"resource_type": "source", "schema": "s", "identifier": "orders"}},
    ...          "nodes": {"seed.p.codes": {"resource_type": "seed", "schema": "a", "name": "codes"},
    ...                    "model.p.stg": {"resource_type": "model", "schema": "a", "name": "stg",
    ...                                    "config": {"materialized": "view"},
    ...                                    "depends_on": {"nodes": ["source.p.s.orders"]}},
    ...                    "model.p.mart": {"resource_type": "model", "schema": "a", "name": "mart",
    ...                                     "config": {"materialized": "table"},
    ...                                     "depends_on": {"nodes": ["model.p.stg", "seed.p.codes"]}}}}
    >>> tables_read(graph, "model.p.mart")
    ['a.codes', 's.orders']
    """
    nodes = {**(graph.get("sources") or {}), **(graph.get("nodes") or {})}
    tables: set[str] = set()
    seen: set[str] = set()
    todo = [unique_id]
    while todo:
        for parent in ((nodes.get(todo.pop()) or {}).get("depends_on") or {}).get("nodes") or []:
            if parent in seen or parent not in nodes:
                continue
            seen.add(parent)
            node = nodes[parent]
            if node.get("resource_type") == "model" and (node.get("config") or {}).get("materialized") in _THROUGH:
                todo.append(parent)
            elif node.get("resource_type") in ("source", "seed", "model", "snapshot") and relation_name(node):
                tables.add(str(relation_name(node)))
    return sorted(tables)


def sources_read(graph: dict[str, Any]) -> list[str]:
    """The sources (`db.table`) read, through views and ephemeral models, by the project's table
    and incremental models that may use statistics: what a run or build describes first (a
    source is never built, so what the catalog says of it holds for the whole invocation).

    >>> graph = {"sources": {"source.p.s.orders": {"resource_type": "source", "schema": "s", "identifier": "orders"}},
    ...          "nodes": {"seed.p.codes": {"resource_type": "seed", "schema": "a", "name": "codes"},
    ...                    "model.p.mart": {"resource_type": "model", "schema": "a", "name": "mart",
    ...                                     "config": {"materialized": "table"}, "raw_code": "select * from a, b",
    ...                                     "depends_on": {"nodes": ["source.p.s.orders", "seed.p.codes"]}}}}
    >>> sources_read(graph)
    ['s.orders']
    """
    models = [uid for uid, node in (graph.get("nodes") or {}).items() if node.get("resource_type") == "model"]
    tables, _ = read_unbuilt(graph, models)
    sources = {relation_name(node) for node in (graph.get("sources") or {}).values()}
    return [table for table in tables if table in sources]
