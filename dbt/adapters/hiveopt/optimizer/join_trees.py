"""Join trees for the report: each SELECT block with joins, as a tree of scans and joins, every
node with the estimator's rows and bytes, and each join with the algorithm the query asks Spark
for (a BROADCAST / SHUFFLE_HASH / MERGE hint naming one of its sides), or none: Spark then
chooses at run time (adaptive execution). Built for the query as written and as rewritten, so a
reorder shows the order before and after; a skew split shows its UNION ALL branches as blocks of
their own. Pure: no I/O, and the query is not changed.

>>> from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
>>> from dbt.adapters.hiveopt.optimizer.estimator import Estimator
>>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
>>> schema = {"db": {"f": {"k": "int", "v": "double"}, "d": {"k": "int", "g": "string"}}}
>>> stats = StatsCatalog.from_dict({"db.f": {"row_count": 10**6, "columns": {"k": {"ndv": 1000}}},
...                                 "db.d": {"row_count": 1000, "columns": {"k": {"ndv": 1000}}}})
>>> sql = "SELECT /*+ BROADCAST(d) */ d.g, f.v FROM db.f AS f JOIN db.d AS d ON f.k = d.k"
>>> expression = prepare_query(sql, schema).expression
>>> trees = join_trees(expression, Estimator(expression, schema, stats))
>>> print("\\n".join(render(trees["root"])))
join inner on f.k = d.k: 1.0M rows, 42.0 MB; BROADCAST d
  scan f (db.f): 1.0M rows, 19.1 MB
  scan d (db.d): 1,000 rows, 31.2 KB
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from dbt.adapters.hiveopt.optimizer.blocks import block_label
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.human import human_bytes, human_rows
from dbt.adapters.hiveopt.optimizer.relation_estimates import RelationEstimate
from dbt.adapters.hiveopt.optimizer.syntax import conjuncts, nested_join

JOIN_HINTS = ("BROADCAST", "BROADCASTJOIN", "MAPJOIN", "SHUFFLE_HASH", "MERGE", "SHUFFLE_MERGE", "MERGEJOIN")
NO_HINT = "no hint: Spark chooses at run time"


def join_trees(expression: exp.Expression, estimator: Estimator) -> dict[str, dict[str, Any]]:
    """{block label: tree} for every block with joins. A tree node is a dict: `kind` ("scan" or
    "join"), `label`, `rows` and `bytes` (None when unknown) and `precision`; a join also has
    `algorithm` and `children` (left, right)."""
    # The estimator's own tree: its memo holds (the pipeline hands over the query as written,
    # which no rule changes in place); any other tree gets a view of its own.
    estimator = estimator if expression is estimator.root else estimator.over(expression)
    trees: dict[str, dict[str, Any]] = {}
    branches = 0
    for i, scope in enumerate(traverse_scope(expression)):
        select = scope.expression
        if not isinstance(select, exp.Select) or not select.args.get("joins") or not select.args.get("from_"):
            continue
        label = block_label(scope)
        if isinstance(select.parent, exp.SetOperation):  # a skew split's branches, or the user's
            branches += 1
            label = f"{type(select.parent).__name__.lower()} branch {branches}"
        hints = _hints(select)
        first, joins = select.args["from_"].this, select.args["joins"]
        trees[label if label not in trees else f"{label} #{i}"] = _tree(estimator, scope, first, joins, hints)
    return trees


def _hints(select: exp.Select) -> dict[str, str]:
    """alias -> the join hint naming it."""
    out: dict[str, str] = {}
    hint = select.args.get("hint")
    for item in hint.expressions if hint is not None else []:
        if isinstance(item, exp.JoinHint) and str(item.this).upper() in JOIN_HINTS:
            for target in item.expressions:
                out[target.name.lower()] = str(item.this).upper()
    return out


def _tree(estimator: Estimator, scope, first: exp.Expression, joins: list[exp.Join], hints) -> dict[str, Any]:
    steps = estimator.join_steps(scope, first, joins)
    where = scope.expression.args.get("where")
    local = conjuncts(where.this if where else None)
    node = _item(estimator, scope, first, hints, local)
    for join, step in zip(joins, steps[1:]):
        right = _item(estimator, scope, join.this, hints, local)
        kind = " ".join(p for p in (join.side, join.kind) if p).lower() or "inner"
        on = join.args.get("on")
        # A hint names a relation: it decides the join where that relation is a side (a scan).
        sides = [c.get("alias") for c in (node, right) if c.get("alias")]
        named = [f"{hints[a]} {a}" for a in sides if a in hints]
        node = {
            "kind": "join",
            "label": f"join {kind}" + (f" on {on.sql(dialect='spark')}" if on is not None else ""),
            **_figures(step),
            "algorithm": ", ".join(named) if named else NO_HINT,
            "children": [node, right],
        }
    return node


def _item(estimator: Estimator, scope, node: exp.Expression, hints, local) -> dict[str, Any]:
    nested = nested_join(node)
    if nested is not None:
        return _tree(estimator, scope, nested, nested.args.get("joins") or [], hints)
    alias = node.alias_or_name
    what = "derived table"
    if isinstance(node, exp.Table):
        what = ".".join(p for p in (node.catalog, node.db, node.name) if p)
    relation = estimator.filtered_source(scope, alias, local)
    return {
        "kind": "scan",
        "label": f"scan {alias} ({what})",
        "alias": alias.lower(),
        "relation": what.lower(),
        **_figures(relation),
    }


def _figures(relation: RelationEstimate) -> dict[str, Any]:
    rows, size = relation.rows, relation.bytes()
    return {
        "rows": None if rows.is_absent else round(rows.value),
        "bytes": None if size.is_absent else round(size.value),
        "precision": rows.precision.name.lower(),
    }


def render(node: dict[str, Any], depth: int = 0) -> list[str]:
    """The tree as indented lines, left child first."""
    line = f"{'  ' * depth}{node['label']}: {human_rows(node.get('rows'))}, {human_bytes(node.get('bytes'))}"
    if node.get("precision") == "absent":
        line += " (no statistics)"
    if node.get("actual_rows") is not None:  # measured by Spark when the model was built
        line += f" (actual {human_rows(node['actual_rows'])}, q-error {node.get('q_error', 0):.2f})"
    if node["kind"] == "join":
        line += f"; {node['algorithm']}"
    lines = [line]
    for child in node.get("children") or []:
        lines += render(child, depth + 1)
    return lines
