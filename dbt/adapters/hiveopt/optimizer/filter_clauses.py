"""FILTER clauses for sibling aggregates merged into one pass (rules/merge_sibling_aggregates.py):
which aggregate blocks can take them, the WHERE the siblings share and each one's own rest, the
clauses themselves, and each FILTER condition computed once per row.

>>> import sqlglot
>>> from dbt.adapters.hiveopt.optimizer.syntax import conjuncts
>>> where, rests = shared_where([conjuncts(sqlglot.parse_one(w)) for w in ("a = 1 AND b < 5", "a = 1")])
>>> [c.sql() for c in where], [r.sql() if r else None for r in rests]
(['a = 1'], ['b < 5', None])
>>> with_filter(sqlglot.parse_one("SUM(x) + 1"), rests[0]).sql()
'SUM(x) FILTER(WHERE b < 5) + 1'
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.decisions import Skip
from dbt.adapters.hiveopt.optimizer.syntax import aggregate_shape_problem, fresh_names, normalized


def sibling_problem(select: exp.Select) -> Skip | None:
    """Why a sibling aggregate cannot take FILTER clauses in a merged pass, else None."""
    problem = aggregate_shape_problem(select, "a sibling aggregate")
    if problem:
        return Skip(problem)
    for agg in select.find_all(exp.AggFunc):
        if isinstance(agg.parent, exp.Filter):
            return Skip("a FILTER clause already in a sibling aggregate")
    if not all(
        isinstance(k, exp.Column) for k in (select.args["group"].expressions if select.args.get("group") else [])
    ):
        return Skip("GROUP BY an expression in a sibling aggregate")
    for projection in select.selects:
        body = projection.unalias()
        if not body.find(exp.AggFunc) and select.args.get("group") is None and body.find(exp.Column):
            return Skip("a sibling's output reads a column outside an aggregate")
    return None


def where_sql(select: exp.Select) -> str:
    """The block's WHERE as SQL ("" without one): siblings of one filter have the same."""
    return normalized(select.args["where"]) if select.args.get("where") else ""


def with_filter(body: exp.Expression, condition: exp.Expression | None) -> exp.Expression:
    """A copy of `body` whose aggregates carry FILTER (WHERE condition); a plain copy for None."""
    body = body.copy()
    if condition is None:
        return body
    for agg in list(body.find_all(exp.AggFunc)):
        filtered = exp.Filter(this=agg.copy(), expression=exp.Where(this=condition.copy()))
        if agg is body:
            return filtered
        agg.replace(filtered)
    return body


def shared_where(filters: list[list[exp.Expression]]) -> tuple[list[exp.Expression], list[exp.Expression | None]]:
    """(conjuncts of a WHERE every sibling's rows pass, each sibling's own rest or None): the
    conjuncts all share, and the OR of the rests unless one sibling has none (then it reads all).
    Every part returned is a copy of its own (the builders take them with copy=False)."""
    common_sql = set.intersection(*[{normalized(c) for c in cs} for cs in filters])
    where = [c.copy() for c in filters[0] if normalized(c) in common_sql]
    rests: list[exp.Expression | None] = []
    for cs in filters:
        rest = [c.copy() for c in cs if normalized(c) not in common_sql]
        rests.append(exp.and_(*rest, copy=False) if rest else None)
    if all(r is not None for r in rests):
        distinct = {normalized(r): r for r in rests}  # siblings of one filter share it
        where.append(exp.or_(*[r.copy() for r in distinct.values()], copy=False))
    return where, rests


def evaluate_filters_once(select: exp.Select, root: exp.Expression) -> bool:
    """Compute each FILTER condition of a merged pass once per row, as a boolean column of a
    derived table over its one table, when some condition is shared by several aggregates:
    Spark evaluates every aggregate's FILTER on its own (no common subexpressions across them).
    The derived table keeps the table's alias and passes its columns through, so the aggregates,
    keys and HAVING read the same values; a NULL condition stays NULL and still drops the row.
    Measured (q9's shape on TPC-H SF 1, SELECT alone, medians of 7): 15 aggregates over 5
    conditions 0.97 s, with the conditions projected 0.73 s. Only over one table (no joins), with
    no subquery or window in the pass. True when it did.

    >>> import sqlglot
    >>> merged = sqlglot.parse_one("SELECT COUNT(*) FILTER (WHERE t.q < 5) AS c, AVG(t.p) FILTER (WHERE t.q < 5) AS a "
    ...                            "FROM db.t AS t WHERE t.q < 5", read="spark")
    >>> evaluate_filters_once(merged, merged), merged.sql("spark")  # doctest: +NORMALIZE_WHITESPACE
    (True, 'SELECT COUNT(*) FILTER(WHERE t._hiveopt_0) AS c, AVG(t.p) FILTER(WHERE t._hiveopt_0) AS a
    FROM (SELECT t.q AS q, t.p AS p, t.q < 5 AS _hiveopt_0 FROM db.t AS t WHERE t.q < 5) AS t')
    """
    source = select.args["from_"].this
    if select.args.get("joins") or not isinstance(source, exp.Table) or select.find(exp.Subquery, exp.Window):
        return False
    filters = [(node, normalized(node.expression.this)) for node in select.find_all(exp.Filter)]
    conditions: dict[str, exp.Expression] = {}
    for node, key in filters:
        conditions.setdefault(key, node.expression.this)
    if len(conditions) == len(filters):
        return False  # no condition is shared
    alias = source.alias_or_name
    columns: dict[str, str] = {}  # lowercase -> as written: Spark's names ignore case
    for column in select.find_all(exp.Column):
        if column.table != alias:
            return False  # a reference to anything but the one table: leave the pass as it is
        columns.setdefault(column.name.lower(), column.name)
    flags = dict(zip(conditions, fresh_names(root, len(conditions), select)))
    inner = exp.Select(
        expressions=[exp.alias_(exp.column(c, table=alias), c, copy=False) for c in columns.values()]
        + [exp.alias_(condition.copy(), flags[k], copy=False) for k, condition in conditions.items()]
    )
    inner.set("from_", exp.From(this=source.copy()))
    if select.args.get("where"):
        inner.set("where", select.args["where"].copy())
    for node, key in filters:
        node.set("expression", exp.Where(this=exp.column(flags[key], table=alias)))
    select.set("from_", exp.From(this=exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias)))))
    select.set("where", None)
    return True
