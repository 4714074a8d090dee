"""Helpers over qualified sqlglot trees that the estimator and the rules share: the conjuncts of
a predicate, the aliases it reads, equi-join pairs, FROM items, inner joins, column renaming. Pure
functions of the tree; no statistics, no costs.

>>> import sqlglot
>>> select = sqlglot.parse_one("SELECT * FROM db.t AS a JOIN db.u AS b ON a.k = b.k AND a.v > 1 WHERE b.w = 2")
>>> [p.sql() for p in block_conjuncts(select)]
['b.w = 2', 'a.k = b.k', 'a.v > 1']
>>> [sorted(aliases_of(p)) for p in block_conjuncts(select)], [c.sql() for c in equi_pair(block_conjuncts(select)[1])]
([['b'], ['a', 'b'], ['a']], ['a.k', 'b.k'])
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

# Functions whose value changes per call: duplicating them (alias expansion) changes results.
NONDETERMINISTIC_FUNCTIONS = {"rand", "random", "randn", "uuid", "shuffle", "monotonically_increasing_id"}


# The mark `mark_volatile` puts on a table reference that names a non-deterministic view.
VOLATILE = "hiveopt_volatile"
# What makes a relation draw other rows at each reading (`deterministic`), as the rules' decisions
# name it when they skip one.
NOT_DETERMINISTIC = (
    "rand() or the like, a TABLESAMPLE without REPEATABLE or by rows, a LIMIT, or a view whose definition has one"
)


def deterministic(node: exp.Expression) -> bool:
    """Two evaluations of `node` give the same rows: no non-deterministic function under it, no
    TABLESAMPLE by share without REPEATABLE (Spark draws its seed where it parses the text), no
    LIMIT, OFFSET or TABLESAMPLE by rows (which rows pass the cut is up to the order they arrive
    in: on a cluster, the order shuffle blocks are fetched in; an ORDER BY with ties at the cut
    leaves it open too), and no reference to a view whose definition has one of those
    (`mark_volatile`).

    >>> import sqlglot
    >>> def det(sql):
    ...     return deterministic(sqlglot.parse_one(sql, read="spark"))
    >>> det("SELECT k FROM t WHERE rand() < 0.1"), det("SELECT k FROM t TABLESAMPLE (10 PERCENT)")
    (False, False)
    >>> det("SELECT k FROM t TABLESAMPLE (10 PERCENT) REPEATABLE (7)"), det("SELECT k FROM t WHERE k > 1")
    (True, True)
    >>> det("SELECT k FROM t LIMIT 5"), det("SELECT k FROM t ORDER BY k LIMIT 5")
    (False, False)
    >>> det("SELECT k FROM t TABLESAMPLE (5 ROWS)"), det("SELECT k FROM t TABLESAMPLE (5 ROWS) REPEATABLE (7)")
    (False, False)
    """
    for found in node.find_all(exp.Table, exp.TableSample, exp.Limit, exp.Offset, exp.Fetch):
        if isinstance(found, (exp.Limit, exp.Offset, exp.Fetch)):
            return False
        if isinstance(found, exp.Table) and found.meta.get(VOLATILE):
            return False
        # By share (PERCENT, BUCKET) Spark draws a seed per occurrence; by rows (`size`) a sample
        # is a LIMIT, whatever its seed.
        if isinstance(found, exp.TableSample):
            if found.args.get("seed") is None or found.args.get("size") is not None:
                return False
    return deterministic_calls(node)


def deterministic_calls(node: exp.Expression) -> bool:
    """No non-deterministic function anywhere under `node`: a copy of an expression under it gives
    the same value (what alias expansion needs; `deterministic` says more, of whole relations)."""
    return not any(
        f.name.lower() in NONDETERMINISTIC_FUNCTIONS or f.sql_name().lower() in NONDETERMINISTIC_FUNCTIONS
        for f in node.find_all(exp.Func)
    )


def mark_volatile(expression: exp.Expression, names: Iterable[str]) -> exp.Expression:
    """Mark the references to the relations `names` (`db.view`, lowercase) in `expression`: views
    whose definition is not deterministic (rand(), uuid(), an unseeded TABLESAMPLE, a LIMIT, or a view of
    such a view). Spark expands a view at each reference, so each one draws its own rows: a rule
    may not read it once where the query reads it twice, twice where it reads it once, nor fetch
    its keys in a query of their own. `deterministic` then says False for any tree that holds such a
    reference; copies keep the mark. Returns `expression`, marked in place.

    >>> import sqlglot
    >>> query = sqlglot.parse_one("SELECT * FROM db.sampled AS s JOIN db.d AS d ON s.k = d.k")
    >>> query = mark_volatile(query, {"db.sampled"})
    >>> [deterministic(t) for t in query.copy().find_all(exp.Table)]
    [False, True]
    """
    wanted = {name.lower() for name in names}
    if wanted:
        for table in expression.find_all(exp.Table):
            if table.db and f"{table.db}.{table.name}".lower() in wanted:
                table.meta[VOLATILE] = True
    return expression


# --- helpers over qualified predicates -------------------------------------------------------
def inside_query(node: exp.Expression, top: exp.Expression) -> bool:
    """Whether a query (a subquery) lies between `node` and `top`: then `node` belongs to it."""
    parent = node.parent
    while parent is not None and parent is not top:
        if isinstance(parent, exp.Query):
            return True
        parent = parent.parent
    return False


def own_aggregate(node: exp.Expression) -> bool:
    """An aggregate of the block itself under `node` (one inside a scalar subquery is the
    subquery's: `SELECT x, (SELECT MAX(y) FROM u) FROM t` keeps t's rows)."""
    return any(not inside_query(a, node) for a in node.find_all(exp.AggFunc))


def conjuncts(predicate: exp.Expression | None) -> list[exp.Expression]:
    """The AND-ed parts of a predicate, parentheses removed."""
    if predicate is None:
        return []
    node = predicate.unnest() if isinstance(predicate, exp.Paren) else predicate
    if isinstance(node, exp.And):
        return [*conjuncts(node.left), *conjuncts(node.right)]
    return [node]


def disjuncts(predicate: exp.Expression) -> list[exp.Expression]:
    """The OR-ed parts of a predicate, parentheses removed."""
    node = predicate.unnest() if isinstance(predicate, exp.Paren) else predicate
    if isinstance(node, exp.Or):
        return [*disjuncts(node.left), *disjuncts(node.right)]
    return [node]


def implied_filter(predicate: exp.Expression, alias: str) -> exp.Expression | None:
    """What an OR over several relations says of one of them: the OR of each branch's conjuncts
    that read only `alias`, or None when some branch has none (that branch lets any row of
    `alias` through) or `predicate` is no OR. A row that passes `predicate` passes this too, and
    Spark filters `alias` by it below the join (PushExtraPredicateThroughJoin): an estimate with
    it counts the rows the join sees. For estimates only; the query keeps what it says. Conjuncts
    with a subquery or a non-deterministic function say nothing here (Spark pushes neither).

    >>> import sqlglot
    >>> implied_filter(sqlglot.parse_one("(n1.x = 'F' AND n2.x = 'G') OR (n1.x = 'G' AND n2.x = 'F')"), "n1").sql()
    "n1.x = 'F' OR n1.x = 'G'"
    >>> implied_filter(sqlglot.parse_one("(n1.x = 'F' AND n2.x = 'G') OR n2.x = 'F'"), "n1") is None
    True
    """
    branches = disjuncts(predicate)
    if len(branches) < 2:
        return None
    parts = []
    for branch in branches:
        mine = [c for c in conjuncts(branch) if own_filter(c, alias)]
        if not mine:
            return None
        parts.append(exp.and_(*[c.copy() for c in mine], copy=False))
    return exp.or_(*parts, copy=False)


def aliases_of(predicate: exp.Expression) -> set:
    """Table aliases a predicate reads in its own block (columns inside its subqueries excluded).
    A walk that does not enter subqueries (the estimator asks this of every conjunct for every
    relation: over TPC-DS it was a tenth of the optimizer's time as find_all plus a climb to
    the top from each column).

    >>> import sqlglot
    >>> sorted(aliases_of(sqlglot.parse_one("a.x = b.y AND c.z IN (SELECT d.w FROM d WHERE d.v = a.x)")))
    ['a', 'b', 'c']
    """
    found: set = set()
    stack = [predicate]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Column):
            if node.table:
                found.add(node.table)
        elif node is predicate or not isinstance(node, exp.Query):
            stack.extend(node.iter_expressions())
    return found


def equi_pair(predicate: exp.Expression) -> tuple[exp.Column, exp.Column] | None:
    if (
        isinstance(predicate, exp.EQ)
        and isinstance(predicate.this, exp.Column)
        and isinstance(predicate.expression, exp.Column)
    ):
        if predicate.this.table and predicate.expression.table and predicate.this.table != predicate.expression.table:
            return predicate.this, predicate.expression
    return None


def nested_join(node: exp.Expression) -> exp.Table | None:
    """`(a JOIN b ON ...)` in a FROM or JOIN: the first relation, which carries the nested joins."""
    if (
        isinstance(node, exp.Subquery)
        and not node.alias
        and isinstance(node.this, exp.Table)
        and node.this.args.get("joins")
    ):
        return node.this
    return None


def source_alias(node: exp.Expression | None) -> str:
    if node is None:
        return ""
    source = node.this
    return source.alias_or_name


# Aggregates whose value over a window partition equals their value over the group, and that
# Spark can compute as window functions (DISTINCT ones it cannot: DISTINCT_WINDOW_FUNCTION_UNSUPPORTED).
WINDOWABLE_AGGREGATES = (exp.Avg, exp.Sum, exp.Min, exp.Max, exp.Count)


# Prefix of the columns the rules add; numbered so they never collide with the query's own.
ADDED_COLUMN_PREFIX = "_hiveopt_"


def identity(scope: Scope, alias: str) -> tuple[str, str] | None:
    """('table', 'db.t') or ('cte', name) for the FROM item `alias` of `scope`; None otherwise."""
    entry = scope.selected_sources.get(alias)
    if entry is None:
        return None
    node, source = entry
    if isinstance(source, exp.Table):
        return "table", ".".join(p for p in (source.db, source.name) if p).lower()
    if isinstance(node, exp.Table) and isinstance(source, Scope) and source.is_cte:
        return "cte", node.name.lower()
    return None


def read_twice_problem(scope: Scope, alias: str) -> str | None:
    """Why the table or CTE `alias` of `scope` may not be read a number of times other than the
    query reads it (once where it reads it twice: the correlated merges), else None: it is not
    deterministic (`deterministic`: rand(), an unseeded TABLESAMPLE, a LIMIT, a view marked volatile).

    >>> import sqlglot
    >>> from sqlglot.optimizer.scope import build_scope
    >>> sql = "WITH r AS (SELECT k, rand() AS x FROM db.t) SELECT * FROM r JOIN db.u ON r.k = u.k"
    >>> scope = build_scope(sqlglot.parse_one(sql))
    >>> read_twice_problem(scope, "r"), read_twice_problem(scope, "u")
    ('the CTE r is not deterministic: evaluating it once instead of twice changes results', None)
    """
    entry = scope.selected_sources.get(alias)
    if entry is None:
        return None
    node, source = entry
    body = source.expression if isinstance(source, Scope) else source
    if deterministic(body):
        return None
    if isinstance(source, Scope):
        return f"the CTE {node.name} is not deterministic: evaluating it once instead of twice changes results"
    return (
        f"{relation_label(scope, alias)} draws other rows at each reading ({NOT_DETERMINISTIC}): reading it "
        "once instead of twice changes results"
    )


def relation_label(scope: Scope, alias: str) -> str:
    """`alias` with what it reads, for decision reasons: 'o (analytics.stg_orders)', 't (CTE totals)',
    'd (a subquery)'; the bare name when it is the table's own.

    >>> import sqlglot
    >>> from sqlglot.optimizer.scope import build_scope
    >>> sql = "WITH x AS (SELECT 1 AS k) SELECT * FROM db.t AS a JOIN db.u ON a.k = u.k JOIN x ON a.k = x.k"
    >>> scope = build_scope(sqlglot.parse_one(sql + " JOIN (SELECT 1 AS k) AS d ON a.k = d.k"))
    >>> [relation_label(scope, alias) for alias in ("a", "u", "x", "d")]
    ['a (db.t)', 'db.u', 'CTE x', 'd (a subquery)']
    >>> column_label(scope, "a", "k"), column_label(scope, "u", "k")
    ('a.k (db.t)', 'u.k (db.u)')
    """
    reads = _reads(scope, alias)
    if reads is None:
        return alias
    return reads if reads.split(".")[-1].removeprefix("CTE ") == alias.lower() else f"{alias} ({reads})"


def column_label(scope: Scope, alias: str, column: str) -> str:
    """`alias.column` with what the alias reads (see relation_label)."""
    reads = _reads(scope, alias)
    return f"{alias}.{column}" + (f" ({reads})" if reads else "")


def _reads(scope: Scope, alias: str) -> str | None:
    kind = identity(scope, alias)
    if kind is None:
        return "a subquery" if alias in scope.selected_sources else None
    return kind[1] if kind[0] == "table" else f"CTE {kind[1]}"


def from_items(select: exp.Select) -> list[exp.Expression]:
    """The block's FROM item and the items of its joins, in order."""
    items = [select.args["from_"].this] if select.args.get("from_") else []
    return items + [join.this for join in select.args.get("joins") or []]


def non_inner_join(select: exp.Select) -> str | None:
    """A description of the first join that is not an inner (or cross) join, else None."""
    for join in select.args.get("joins") or []:
        if not is_inner_join(join):
            side, kind = (join.side or "").upper(), (join.kind or "").upper()
            return " ".join(p for p in (join.args.get("method") or "", side, kind, "JOIN") if p).strip()
    return None


def block_conjuncts(select: exp.Select, inner_only: bool = False) -> list[exp.Expression]:
    """WHERE and every ON conjunct of an all-inner block (all of them filter the same rows); with
    `inner_only`, the ON conjuncts of inner joins only (an outer join's ON filters no row out)."""
    where = select.args.get("where")
    out = conjuncts(where.this if where else None)
    for join in select.args.get("joins") or []:
        if not (inner_only and join.side):
            out += conjuncts(join.args.get("on"))
    return out


def aggregate_shape_problem(select: exp.Select, where: str, having: bool = False) -> str | None:
    """Why an aggregate block cannot be merged into another read ("... inside {where}"), else None:
    clauses that filter or cut its groups, windows, nested subqueries, non-deterministic calls.
    `having`: HAVING is allowed (an IN subquery whose HAVING becomes the window's condition).

    >>> import sqlglot
    >>> having = sqlglot.parse_one("SELECT k, SUM(v) FROM t GROUP BY k HAVING SUM(v) > 1")
    >>> aggregate_shape_problem(having, "the aggregate")
    'HAVING inside the aggregate'
    """
    for arg, clause in (
        ("having", "HAVING" if not having else None),
        ("limit", "LIMIT"),
        ("offset", "OFFSET"),
        ("distinct", "SELECT DISTINCT"),
        ("order", "ORDER BY"),
        ("qualify", "QUALIFY"),
    ):
        if clause and select.args.get(arg):
            return f"{clause} inside {where}"
    if select.find(exp.Window):
        return f"a window function inside {where}"
    if any(s is not select for s in select.find_all(exp.Select)):
        return f"a nested subquery inside {where}"
    if not deterministic(select):
        return f"a non-deterministic expression inside {where}"
    return None


def renamed(node: exp.Expression, old: str, new: str) -> exp.Expression:
    """A copy of `node` with columns of table alias `old` pointed at alias `new`."""
    return renamed_all(node, {old: new})


def renamed_all(node: exp.Expression, mapping: dict[str, str]) -> exp.Expression:
    """A copy of `node` with columns of each alias in `mapping` pointed at the mapped alias (at once:
    a -> b and b -> a swap)."""
    copy = node.copy()
    for column in copy.find_all(exp.Column):
        if column.table in mapping:
            column.set("table", exp.to_identifier(mapping[column.table]))
    return copy


def normalized(node: exp.Expression) -> str:
    return node.sql(dialect="spark")


def own_filter(predicate: exp.Expression, alias: str) -> bool:
    """Reads only `alias`, no subquery, nothing non-deterministic: a copy of it filters the same
    rows of `alias` wherever it is applied (partition pruning's small-side filters, what an OR
    says of one relation)."""
    return aliases_of(predicate) == {alias} and predicate.find(exp.Query) is None and deterministic(predicate)


def local_to(predicate: exp.Expression, alias: str) -> bool:
    return aliases_of(predicate) == {alias} and predicate.find(exp.Subquery) is None


def has_nested_query(expression: exp.Expression) -> bool:
    """Whether a SELECT stands inside another as an expression or a FROM item: the subquery of an
    IN, EXISTS, ANY/ALL or scalar subquery, a derived table, ARRAY(SELECT ...); sqlglot's scopes
    say which (a CTE's body and a set operation's branches are the query's own blocks). Not which
    node wraps it: sqlglot wraps an EXISTS's and an ALL's SELECT in no exp.Subquery. A query whose
    scopes sqlglot cannot build counts as nested (the rules then look at it).

    >>> import sqlglot
    >>> def nested(sql):
    ...     return has_nested_query(sqlglot.parse_one(sql, read="spark"))
    >>> nested("WITH source AS (SELECT * FROM t), renamed AS (SELECT a AS b FROM source) SELECT * FROM renamed")
    False
    >>> nested("SELECT a FROM t UNION ALL (SELECT a FROM u)"), nested("SELECT * FROM (SELECT a FROM t) AS d")
    (False, True)
    >>> [nested(f"SELECT a FROM t WHERE {p}") for p in ("EXISTS (SELECT 1 FROM u WHERE u.k = t.k)",
    ...  "a > ALL (SELECT k FROM u)", "a IN (SELECT k FROM u)", "a = (SELECT MAX(k) FROM u)")]
    [True, True, True, True]
    """
    try:
        return any(scope.is_subquery or scope.is_derived_table for scope in traverse_scope(expression))
    except Exception:  # counted as nested: the model goes on to the optimizer, which says why it stops
        return True


def fresh_names(expression: exp.Expression, count: int, *also: exp.Expression) -> list[str]:
    """`count` column names unused anywhere in the query (and in `also`, parts not yet in it)."""
    used = {i.name.lower() for node in (expression, *also) for i in node.find_all(exp.Identifier)}
    names, n = [], 0
    while len(names) < count:
        name = f"{ADDED_COLUMN_PREFIX}{n}"
        if name not in used:
            names.append(name)
        n += 1
    return names


def columns_of(select: exp.Select, scope: Scope, alias: str, all_scopes: Iterable[Scope]) -> list[str]:
    """Names of the columns of FROM item `alias` that the block reads, its own subqueries included
    (where they refer to it from outside), in first-seen order."""
    names: list[str] = []
    for s in all_scopes:
        if s is not scope and not _inside(s.expression, select):
            continue
        if s is not scope and alias in s.sources:
            continue  # a subquery with its own relation of that name
        for column in s.columns:
            if column.table == alias and column.name not in names:
                names.append(column.name)
    return names


def _inside(node: exp.Expression, ancestor: exp.Expression) -> bool:
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent
    return False


def replace_columns(select: exp.Select, mapping: dict[tuple[str, str], exp.Expression]) -> None:
    """Replace columns `alias.name` (keys lowercase) anywhere in the block by copies of the mapped
    expressions; subqueries that define a relation of that alias themselves keep theirs."""
    aliases = {a for a, _ in mapping}
    for column in list(select.find_all(exp.Column)):
        key = (column.table.lower(), column.name.lower())
        if key in mapping and not shadowed(column, select, aliases):
            column.replace(mapping[key].copy())


def shadowed(column: exp.Column, select: exp.Select, aliases) -> bool:
    """Whether a query between `column` and `select` reads its own relation named by one of
    `aliases` (then the column is that relation's, not the block's)."""
    node = column.parent
    while node is not None and node is not select:
        if isinstance(node, exp.Select) and any(item.alias_or_name in aliases for item in from_items(node)):
            return True
        node = node.parent
    return False


def remove_item(select: exp.Select, alias: str) -> None:
    """Drop FROM item `alias` from an all-inner block; its ON conjuncts move to WHERE."""
    joins = list(select.args.get("joins") or [])
    moved: list[exp.Expression] = []
    from_item = select.args["from_"].this
    if from_item.alias_or_name == alias:
        first = joins.pop(0)
        if first.args.get("on"):
            moved.append(first.args["on"])
        select.set("from_", exp.From(this=first.this))
    else:
        for join in joins:
            if join.this.alias_or_name == alias:
                if join.args.get("on"):
                    moved.append(join.args["on"])
                joins.remove(join)
                break
    select.set("joins", joins or None)
    if moved:
        add_where(select, moved)


def add_where(select: exp.Select, predicates: list[exp.Expression]) -> None:
    where = select.args.get("where")
    parts = ([where.this] if where else []) + list(predicates)
    select.set("where", exp.Where(this=exp.and_(*parts, copy=False)) if parts else None)


def drop_conjuncts(select: exp.Select, doomed: list[exp.Expression]) -> None:
    """Remove these conjunct nodes (by identity) from WHERE and ON clauses."""
    ids = {id(d) for d in doomed}
    for holder, key in [(select, "where")] + [(j, "on") for j in select.args.get("joins") or []]:
        clause = holder.args.get(key)
        if clause is None:
            continue
        body = clause.this if key == "where" else clause
        kept = [c for c in conjuncts(body) if id(c) not in ids]
        if len(kept) == len(conjuncts(body)):
            continue
        rebuilt = exp.and_(*kept, copy=False) if kept else None
        if key == "where":
            holder.set("where", exp.Where(this=rebuilt) if rebuilt is not None else None)
        else:
            holder.set("on", rebuilt)


def is_inner_join(join: exp.Join, cross: bool = True) -> bool:
    """An inner join (a CROSS join too, unless `cross` is False) without USING or NATURAL: the one
    definition every rule uses. USING and NATURAL merge their key columns, so their ON is not
    theirs to move.

    >>> import sqlglot
    >>> joins = sqlglot.parse_one("SELECT * FROM a JOIN b ON a.k = b.k LEFT JOIN c ON 1 = 1, d").args["joins"]
    >>> [is_inner_join(j) for j in joins]
    [True, False, True]
    """
    return (
        (join.side or "").upper() == ""
        and (join.kind or "").upper() in ("", "INNER", *(("CROSS",) if cross else ()))
        and not join.args.get("using")
        and (join.args.get("method") or "").upper() != "NATURAL"
    )
