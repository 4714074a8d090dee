"""The queries that read a small side's join keys (partition pruning's pre-pass): its distinct
values, their min and max, and the same keys as a subquery for a semi-join filter. Built as AST
nodes from the block; nothing runs here (the adapter runs them before the rules).

>>> import sqlglot
>>> from sqlglot.optimizer.scope import build_scope
>>> from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
>>> select = sqlglot.parse_one("SELECT f.v FROM db.f AS f JOIN db.d AS d ON f.k = d.k")
>>> fetch = value_fetch(build_scope(select), "d", sqlglot.exp.column("k", "d"), [], None, OptimizerConfig(), True)
>>> fetch.values_query.sql("spark")
'SELECT DISTINCT d.k AS k FROM db.d AS d WHERE NOT d.k IS NULL LIMIT 1001'
>>> fetch.range_query.sql("spark")
'SELECT MIN(d.k) AS low, MAX(d.k) AS high FROM db.d AS d WHERE NOT d.k IS NULL'
>>> fetch.keys_query.sql("spark")
'SELECT /*+ BROADCAST(d) */ d.k AS k FROM db.d AS d WHERE NOT d.k IS NULL'
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.context import ValueFetch
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.prunable_joins import relation_node
from dbt.adapters.hiveopt.optimizer.syntax import deterministic


def value_fetch(
    scope: Scope,
    small: str,
    small_key: exp.Column,
    filters: list[exp.Expression],
    with_: exp.With | None,
    config: OptimizerConfig,
    broadcast: bool,
) -> ValueFetch:
    """SELECT DISTINCT key FROM <small side with its own filters> — a superset of the keys that
    reach the join, which is all the rewrite needs. Also the same keys as a subquery for the
    semi-join filter, with a BROADCAST hint when they fit (`broadcast`): Spark sizes the subquery
    from the files, not from the filters, and a sort-merge semi join would shuffle the big side
    before its aggregate."""
    node = relation_node(scope.expression, small).copy()
    filters = list(filters)
    key = exp.column(small_key.name, table=small)
    filters.append(exp.not_(exp.Is(this=key.copy(), expression=exp.null())))
    base = exp.select(exp.alias_(key.copy(), "k")).from_(node).where(exp.and_(*filters))
    keys_query = None
    if broadcast:  # a small side that is not deterministic gets no fetch at all (prune_candidates)
        keys_query = base.copy()
        keys_query.set(
            "hint", exp.Hint(expressions=[exp.Anonymous(this="BROADCAST", expressions=[exp.to_identifier(small)])])
        )
    values = base.copy().distinct().limit(config.prune_max_values + 1)
    bounds = base.copy()
    bounds.set(
        "expressions", [exp.alias_(exp.Min(this=key.copy()), "low"), exp.alias_(exp.Max(this=key.copy()), "high")]
    )
    identity = values.copy()
    for hint in list(identity.find_all(exp.Hint)):
        hint.pop()
    if with_ is not None:
        values.set("with_", with_.copy())
        bounds.set("with_", with_.copy())
    return ValueFetch(identity.sql(DIALECT), values, bounds, small, keys_query)


def small_side_deterministic(node: exp.Expression, with_: exp.With | None) -> bool:
    """Nothing non-deterministic in the small side (nor in the CTE it names; syntax.deterministic):
    its keys fetched in a query of their own, or a copy of it in a semi-join filter, must be the
    rows the join reads."""
    bodies = [node]
    if with_ is not None and isinstance(node, exp.Table) and not node.db:
        bodies += [cte.this for cte in with_.expressions if cte.alias_or_name == node.name]
    return all(deterministic(body) for body in bodies)
