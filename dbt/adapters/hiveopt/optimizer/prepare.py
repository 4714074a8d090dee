"""Parse and qualify a model's SELECT against the catalog schema, keeping its output names.

sqlglot's qualify lowercases identifiers (Spark resolves names case-insensitively) and names
unaliased expressions `_col_N`. A CTAS keeps the case of its output names, so before qualifying
we remember every alias of the outermost SELECT as written, and after qualifying we give the
output names back their case: aliases as written, columns (and stars) as the catalog spells them,
which is how Spark names them.

>>> q = prepare_query("SELECT Id AS MyId, name FROM db.t", {"db": {"t": {"id": "int", "Name": "string"}}})
>>> q.output_names
['MyId', 'Name']
>>> q.expression.sql("spark")
'SELECT t.id AS MyId, t.name AS Name FROM db.t AS t'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.pushdown_projections import pushdown_projections
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.join_conditions import conditions_into_on
from dbt.adapters.hiveopt.optimizer.syntax import deterministic_calls

_SAFE_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ORIGINAL_NAME = "hiveopt_original_name"


class UnsupportedQuery(Exception):
    """The query is outside what the optimizer handles: run the original SQL."""


# The alias an unaliased output expression gets until Spark names it (prepare_query's
# `names_later`), by its position in the output. The rules' own names are `_hiveopt_<n>`.
_PLACEHOLDER = "_hiveopt_output_{}"


@dataclass
class PreparedQuery:
    expression: exp.Query
    output_names: list[str]
    tables: list[str]  # physical tables read, `db.table`, lowercase
    # Placeholder alias -> output position, for the outputs Spark is still to name (names_later).
    placeholders: dict[str, int] = field(default_factory=dict)


def parse_query(sql: str) -> exp.Query:
    """Parse exactly one query (SELECT, set operation, WITH ...) in Spark's dialect."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
    except SqlglotError as error:
        raise UnsupportedQuery(f"cannot parse: {str(error).splitlines()[0]}") from error
    if len(statements) != 1:
        raise UnsupportedQuery(f"expected one statement, found {len(statements)}")
    (statement,) = statements
    if not isinstance(statement, exp.Query):
        raise UnsupportedQuery(f"not a query: {type(statement).__name__}")
    unknown = next(statement.find_all(exp.Command), None)
    if unknown is not None:
        raise UnsupportedQuery(f"construct sqlglot does not understand: {unknown.sql(DIALECT)[:60]}")
    return statement


def physical_tables(expression: exp.Expression) -> list[str]:
    """`db.table` names read by the query (CTE references excluded), lowercase, in order."""
    cte_names = {cte.alias_or_name.lower() for cte in expression.find_all(exp.CTE)}
    seen: list[str] = []
    for table in expression.find_all(exp.Table):
        if not table.name or isinstance(table.this, exp.Func) or table.find_ancestor(exp.Hint):
            continue  # table-valued functions, VALUES, names inside hints
        if not table.db and table.name.lower() in cte_names:
            continue
        name = ".".join(p for p in (table.db, table.name) if p).lower()
        if name not in seen:
            seen.append(name)
    return seen


def outermost_select(expression: exp.Expression) -> exp.Select:
    """The SELECT whose projections name the query's output (a union's first branch)."""
    node = expression
    while isinstance(node, (exp.SetOperation, exp.Subquery)):
        node = node.this if isinstance(node, exp.Subquery) else node.left
    if not isinstance(node, exp.Select):
        raise UnsupportedQuery(f"unsupported top-level query: {type(node).__name__}")
    return node


def output_names(expression: exp.Expression) -> list[str]:
    return [p.alias_or_name for p in outermost_select(expression).selects]


def _needs_name(projection: exp.Expression) -> bool:
    """An output expression Spark names after its text (`count(1)`, `sum(x)`): neither aliased nor
    a plain column or star (the catalog names those)."""
    if isinstance(projection, exp.Alias):
        return False
    inner = projection.unnest() if isinstance(projection, exp.Paren) else projection
    return not isinstance(inner, (exp.Column, exp.Star))  # those are named by the catalog


def _is_star(projection: exp.Expression) -> bool:
    """`*` or `t.*`."""
    return isinstance(projection, exp.Star) or (
        isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
    )


def _pin_output_names(
    select: exp.Select, spark_names: Sequence[str] | None = None, names_later: bool = False
) -> dict[str, int]:
    """Remember each alias as written (qualify lowercases even quoted names in Spark's dialect);
    a plain column keeps the catalog's case, as Spark names it; anything else is given the name
    Spark gives it (`spark_names`, one per output column, from Spark's analysis of the query),
    or with `names_later` a placeholder (returned: placeholder -> position) that name_outputs
    replaces once a rule has rewritten the query; otherwise the query runs as written."""
    placeholders: dict[str, int] = {}
    later = names_later and spark_names is None
    named = spark_names is not None and len(spark_names) == len(select.selects)
    if any(_is_star(p) for p in select.selects):
        named = later = False  # a star is several output columns: the names do not line up
    for i, projection in enumerate(list(select.selects)):
        if isinstance(projection, exp.Alias):
            projection.args["alias"].meta[_ORIGINAL_NAME] = projection.alias
            continue
        if not _needs_name(projection):
            continue
        if later:
            name = _PLACEHOLDER.format(i)
            placeholders[name] = i
        elif not named:
            # Spark names an unaliased expression after its text; we cannot reproduce that name.
            raise UnsupportedQuery(_unnamed(projection))
        else:
            name = str(spark_names[i])
        # An Alias node, never exp.alias_: that one names a scalar subquery by the subquery's own
        # alias, which a rule replacing the subquery drops with it (merge_sibling_aggregates named
        # the output `_hiveopt_5`; found by the differential fuzzer).
        aliased = exp.Alias(this=projection.copy(), alias=exp.to_identifier(name, quoted=True))
        aliased.args["alias"].meta[_ORIGINAL_NAME] = name
        projection.replace(aliased)
    return placeholders


def _placeholder_like_names(expression: exp.Query) -> bool:
    """Whether the query has an output to name later and an identifier that looks like a
    placeholder (the walk over every identifier only for queries with such an output)."""
    if not any(_needs_name(p) for p in outermost_select(expression).selects):
        return False
    return any(i.name.lower().startswith(_PLACEHOLDER[:-2]) for i in expression.find_all(exp.Identifier))


def _unnamed(projection: exp.Expression) -> str:
    return f"output expression without an alias: {projection.sql(DIALECT)[:60]} (give it an alias)"


def name_outputs(expression: exp.Expression, prepared: PreparedQuery, spark_names: Sequence[str] | None) -> None:
    """Give the outputs prepare_query left to Spark (`names_later`) the names Spark gives them
    (`DESCRIBE QUERY` of the query as written), wherever a rule carried the placeholder, in place.
    UnsupportedQuery when Spark's names do not line up with the output: the query runs as written.

    >>> schema = {"db": {"t": {"k": "int"}}}
    >>> prepared = prepare_query("SELECT k, COUNT(*) FROM db.t GROUP BY k", schema, names_later=True)
    >>> prepared.expression.sql("spark")
    'SELECT t.k AS k, COUNT(*) AS _hiveopt_output_1 FROM db.t AS t GROUP BY t.k'
    >>> rewritten = prepared.expression.copy()
    >>> name_outputs(rewritten, prepared, ["k", "count(1)"])
    >>> rewritten.sql("spark")
    'SELECT t.k AS k, COUNT(*) AS `count(1)` FROM db.t AS t GROUP BY t.k'
    """
    if not prepared.placeholders:
        return
    if spark_names is None or len(spark_names) != len(prepared.output_names):
        position = min(prepared.placeholders.values())
        raise UnsupportedQuery(_unnamed(outermost_select(prepared.expression).selects[position].this))
    for identifier in expression.find_all(exp.Identifier):
        position = prepared.placeholders.get(identifier.name)
        if position is not None:
            name = str(spark_names[position])
            identifier.set("this", name)
            identifier.set("quoted", not _SAFE_IDENTIFIER.match(name))


def _guard_star_over_using(expression: exp.Expression) -> None:
    """Spark puts the USING / NATURAL keys first and drops their duplicates in `*` and `t.*`;
    sqlglot expands those stars otherwise. Such queries run as written."""
    for select in expression.find_all(exp.Select):
        joins = select.args.get("joins") or []
        merged_keys = any(j.args.get("using") or (j.args.get("method") or "").upper() == "NATURAL" for j in joins)
        if merged_keys and any(_is_star(p) for p in select.selects):
            raise UnsupportedQuery("a star over a USING or NATURAL join (Spark orders its columns its own way)")


def _guard_distinct_order_by(expression: exp.Expression) -> None:
    """SELECT DISTINCT (col) ... ORDER BY col: qualify turns the ORDER BY into `t.col`, which Spark
    cannot resolve above a DISTINCT (TPC-DS q41). Point such ORDER BY keys at the output alias."""
    for select in expression.find_all(exp.Select):
        order = select.args.get("order")
        if not select.args.get("distinct") or not order:
            continue
        by_expression = {}
        for projection in select.selects:
            if isinstance(projection, exp.Alias):
                inner = projection.this.unnest() if isinstance(projection.this, exp.Paren) else projection.this
                by_expression[inner] = projection.alias
        for ordered in order.expressions:
            key = ordered.this.unnest() if isinstance(ordered.this, exp.Paren) else ordered.this
            alias = by_expression.get(key)
            if alias:
                ordered.set("this", exp.column(alias))


def _guard_invented_field_access(original: exp.Expression, qualified: exp.Expression) -> None:
    """sqlglot's qualify reads `dk.k` in the ON clause of a SEMI or ANTI join whose table is aliased
    `dk` and has a column `dk` as the field `k` of that column (`dk.dk.k`): Spark then fails the
    optimized query. A qualified query with more field accesses than the query as written is not
    optimized (found by the differential fuzzer).

    >>> schema = {"db": {"a": {"k": "int"}, "dk": {"k": "int", "dk": "int"}}}
    >>> prepare_query("SELECT a.k FROM db.a AS a ANTI JOIN db.dk AS dk ON a.k = dk.k", schema)
    Traceback (most recent call last):
    ...
    dbt.adapters.hiveopt.optimizer.prepare.UnsupportedQuery: cannot qualify: a column read as a field of ...
    """
    if len(list(qualified.find_all(exp.Dot))) > len(list(original.find_all(exp.Dot))):
        raise UnsupportedQuery(
            "cannot qualify: a column read as a field of another column (a SEMI or ANTI join's "
            "alias that is also a column name)"
        )


def _unquote_safe_identifiers(expression: exp.Expression) -> None:
    for identifier in expression.find_all(exp.Identifier):
        if identifier.quoted and _SAFE_IDENTIFIER.match(identifier.name):
            identifier.set("quoted", False)


def prepare_query(
    sql: str,
    schema: dict[str, dict[str, dict[str, str]]],
    default_db: str | None = None,
    parsed: exp.Query | None = None,
    spark_output_names: Sequence[str] | None = None,
    names_later: bool = False,
) -> PreparedQuery:
    """Parse, check the schema covers every table, qualify every column, keep the output names.
    `parsed`: `parse_query(sql)` when the caller has it already (it is not modified).
    `spark_output_names`: the query's output column names as Spark names them (`DESCRIBE QUERY`),
    which an output expression without an alias gets as its alias (the rewrite then builds a
    table with the same columns); without them such a query is not optimized, unless
    `names_later`: such an expression is then given a placeholder alias, which name_outputs
    replaces with Spark's name once a rule has rewritten the query (a query no rule rewrites runs
    as written and never needs the name).

    >>> schema, names = {"db": {"t": {"k": "int"}}}, ["k", "count(1)"]
    >>> prepared = prepare_query("SELECT k, COUNT(*) FROM db.t GROUP BY k", schema, spark_output_names=names)
    >>> prepared.expression.sql("spark")
    'SELECT t.k AS k, COUNT(*) AS `count(1)` FROM db.t AS t GROUP BY t.k'
    """
    original = parsed if parsed is not None else parse_query(sql)
    tables = physical_tables(original)
    known = {f"{db}.{t}".lower() for db, ts in schema.items() for t in ts}
    if default_db:
        known |= {t.lower() for t in schema.get(default_db, {})}
    missing = [t for t in tables if t not in known]
    if missing:
        raise UnsupportedQuery(f"no schema for {', '.join(missing)}")

    working = original.copy()
    _guard_star_over_using(working)
    if names_later and _placeholder_like_names(working):
        names_later = False  # the query's own names look like placeholders: they would be renamed
    placeholders = _pin_output_names(outermost_select(working), spark_output_names, names_later)
    try:
        qualified = qualify(
            working,
            schema=schema,
            dialect=DIALECT,
            db=default_db,
            expand_alias_refs=deterministic_calls(working),
            quote_identifiers=False,
            identify=False,
            validate_qualify_columns=True,
        )
    except SqlglotError as error:
        raise UnsupportedQuery(f"cannot qualify: {str(error).splitlines()[0]}") from error
    _guard_distinct_order_by(qualified)
    _guard_invented_field_access(original, qualified)
    # Inner joins' equi-conditions written in WHERE go to their ON: one shape for every rule.
    conditions_into_on(qualified)

    # Give output names back their case: aliases as written, columns as the catalog spells them.
    case_of = {c.lower(): c for ts in schema.values() for cols in ts.values() for c in cols}
    case_of.update({a.alias.lower(): a.alias for a in original.find_all(exp.Alias) if a.alias})
    for projection in outermost_select(qualified).selects:
        alias = projection.args.get("alias") if isinstance(projection, exp.Alias) else None
        if alias is None:
            continue
        if _ORIGINAL_NAME in alias.meta:
            alias.set("this", alias.meta[_ORIGINAL_NAME])
        elif alias.name in case_of:
            alias.set("this", case_of[alias.name])
    names = output_names(qualified)
    _unquote_safe_identifiers(qualified)
    return PreparedQuery(expression=qualified, output_names=names, tables=tables, placeholders=placeholders)


def select_scopes(expression: exp.Expression):
    """Every SELECT scope of the query, innermost first (CTEs, derived tables, subqueries, unions)."""
    return [s for s in traverse_scope(expression) if isinstance(s.expression, exp.Select)]


def referenced_columns(expression: exp.Expression) -> dict[str, set[str]]:
    """Columns read from each physical table, in any clause, by `db.table`: a statistics pass
    reads these (and the table's numbers and dates), not every column of the table.

    >>> from sqlglot import parse_one
    >>> used = referenced_columns(parse_one("SELECT t.s, COUNT(*) FROM db.t AS t JOIN db.u AS u ON t.k = u.k "
    ...                                     "GROUP BY t.s", read="spark"))
    >>> sorted((table, sorted(columns)) for table, columns in used.items())
    [('db.t', ['k', 's']), ('db.u', ['k'])]

    What an EXISTS subquery selects is never read (TPC-H Q21's `EXISTS (SELECT * FROM lineitem
    ...)`, its star expanded, asked a pass over every column of lineitem):

    >>> used = referenced_columns(parse_one("SELECT t.s FROM db.t AS t WHERE EXISTS (SELECT u.k, u.v "
    ...                                     "FROM db.u AS u WHERE u.k = t.k)", read="spark"))
    >>> sorted((table, sorted(columns)) for table, columns in used.items())
    [('db.t', ['k', 's']), ('db.u', ['k'])]

    Nor what a CTE or a derived table selects and nothing reads (dbt's import CTE, `WITH source
    AS (SELECT * FROM db.t)`, its star expanded, asked a pass over every column of db.t for a
    view that renames three of them):

    >>> used = referenced_columns(parse_one("WITH source AS (SELECT t.k AS k, t.s AS s, t.c AS c FROM db.t AS t), "
    ...                                     "renamed AS (SELECT source.k AS key FROM source AS source) "
    ...                                     "SELECT renamed.key AS key FROM renamed AS renamed", read="spark"))
    >>> sorted((table, sorted(columns)) for table, columns in used.items())
    [('db.t', ['k'])]
    """
    out: dict[str, set[str]] = {}
    for scope in traverse_scope(_without_unread_projections(expression)):
        select = scope.expression
        unread = ()
        if isinstance(select, exp.Select) and isinstance(select.parent, exp.Exists):
            unread = tuple(select.expressions)
        for column in scope.columns:
            if unread and _inside(column, unread, select):
                continue
            source = scope.sources.get(column.table)
            if isinstance(source, exp.Table):
                name = ".".join(p for p in (source.db, source.name) if p).lower()
                out.setdefault(name, set()).add(column.name.lower())
    return out


def _without_unread_projections(expression: exp.Expression) -> exp.Expression:
    """A copy without the projections of CTEs and derived tables that no outer block reads
    (sqlglot's pushdown_projections; a DISTINCT block and a UNION, which dedupe, keep theirs), for
    counting the columns a query reads; the query itself stays as written. As it is, when that
    pass fails."""
    if expression.find(exp.CTE, exp.Subquery) is None:
        return expression
    try:
        return pushdown_projections(expression.copy())
    except Exception:  # counted as written: a wider statistics pass, never another result
        return expression


def _inside(node: exp.Expression, parts: tuple[exp.Expression, ...], stop: exp.Expression) -> bool:
    """Whether `node` is one of `parts` or under one of them (looking up to `stop`)."""
    while node is not None and node is not stop:
        if any(node is part for part in parts):
            return True
        node = node.parent
    return False


def key_columns(expression: exp.Expression) -> dict[str, set[str]]:
    """Columns used as join or filter keys (ON, WHERE), by physical `db.table`: the collector
    gathers heavy hitters and histograms for these. Not GROUP BY: a group count comes from NDVs
    only, and detailing a string column only grouped on cost a second pass over the table
    (customer_orders' c_name: 0.7 s for a view that builds in 0.2 s).

    >>> from sqlglot import parse_one
    >>> keys = key_columns(parse_one("SELECT t.s, COUNT(*) FROM db.t AS t JOIN db.u AS u ON t.k = u.k "
    ...                              "WHERE u.d > 1 GROUP BY t.s", read="spark"))
    >>> sorted((table, sorted(columns)) for table, columns in keys.items())
    [('db.t', ['k']), ('db.u', ['d', 'k'])]
    """
    out: dict[str, set[str]] = {}
    for scope in traverse_scope(expression):
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        clauses = [select.args.get("where")]
        clauses += [join.args.get("on") for join in select.args.get("joins") or []]
        for clause in clauses:
            if clause is None:
                continue
            for column in clause.find_all(exp.Column):
                source = scope.sources.get(column.table)
                if isinstance(source, exp.Table):
                    name = ".".join(p for p in (source.db, source.name) if p).lower()
                    out.setdefault(name, set()).add(column.name.lower())
    return out
