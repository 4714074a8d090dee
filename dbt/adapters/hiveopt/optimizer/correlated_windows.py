"""The tree edits of merge_correlated_aggregates: an aggregate turned into a window over its
partition key, the derived table that computes it, and how a subquery's relations are matched
onto the outer block's. No decisions here: the rule decides, these write.

>>> import sqlglot
>>> print(aggregate_as_window(sqlglot.parse_one("0.2 * AVG(t.x)"), "t", "o", ["k"]).sql())
0.2 * AVG(o.x) OVER (PARTITION BY o.k)
"""

from __future__ import annotations

import itertools

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.syntax import (
    conjuncts,
    fresh_names,
    from_items,
    identity,
    normalized,
    renamed,
    renamed_all,
    replace_columns,
    shadowed,
)

# Inner-to-outer alias mappings tried per subquery (each relation may be read several times).
MAX_MAPPINGS = 64


def aggregate_as_window(
    projection: exp.Expression, inner_alias: str, outer_alias: str, keys: list[str]
) -> exp.Expression:
    """The projection with every aggregate computed over the window of its key."""
    return over(renamed(projection, inner_alias, outer_alias), [exp.column(k, table=outer_alias) for k in keys])


def over(body: exp.Expression, partition: list[exp.Column]) -> exp.Expression:
    """`body` with every aggregate (not already a window) computed OVER (PARTITION BY partition)."""
    body = body.copy()
    for agg in list(body.find_all(exp.AggFunc)):
        if agg.find_ancestor(exp.Window):
            continue
        window = exp.Window(this=agg.copy(), partition_by=[c.copy() for c in partition])
        if agg is body:
            body = window
        else:
            agg.replace(window)
    return body


def from_item(select: exp.Select, alias: str) -> exp.Expression:
    return next(item for item in from_items(select) if item.alias_or_name == alias)


def window_block(
    source_item: exp.Expression,
    outer_alias: str,
    columns: list[str],
    windows: list[tuple[str, exp.Expression]],
    filters: list[exp.Expression],
) -> exp.Subquery:
    table = source_item.copy()
    table.set("alias", exp.TableAlias(this=exp.to_identifier(outer_alias)))
    select = exp.select(
        *[exp.column(c, table=outer_alias).as_(c) for c in columns],
        *[expression.as_(name) for name, expression in windows],
    ).from_(table)
    if filters:
        select = select.where(exp.and_(*filters))
    return select.subquery(outer_alias)


def from_item_index(select: exp.Select, alias: str) -> int:
    return next(i for i, item in enumerate(from_items(select)) if item.alias_or_name == alias)


def null_for_null_keys(value: exp.Expression, keys: list[exp.Column]) -> exp.Expression:
    """NULL where a key is NULL (a correlated subquery or outer join matches nothing there)."""
    return exp.Case(
        ifs=[exp.If(this=exp.or_(*[k.copy().is_(exp.null()) for k in keys]), true=exp.null())], default=value
    )


def match_outer(inner_aliases, idents, local, pairs, outer: Scope, outer_conjuncts, schema):
    """(inner alias -> outer alias, direct) such that the outer block reads the same relations,
    every filter and join condition of the subquery is one of the outer block's too, and every
    correlation column is the mapped key or equated to it; else why there is no such mapping."""
    candidates = [[o for o in outer.selected_sources if identity(outer, o) == idents[a]] for a in inner_aliases]
    texts = {normalized(c) for c in outer_conjuncts}
    missing = None
    for n, choice in enumerate(itertools.product(*candidates)):
        if n >= MAX_MAPPINGS:
            break
        if len(set(choice)) != len(choice):
            continue
        mapping = dict(zip(inner_aliases, choice))
        absent = [p for p in local if normalized(renamed_all(p, mapping)) not in texts]
        if absent:
            missing = missing or absent[0]
            continue
        kinds = [correlated_to(mapping[a], name, column, outer, outer_conjuncts, schema) for a, name, column in pairs]
        if all(kinds):
            return mapping, any(k == "direct" for k in kinds)
    if missing is not None:
        return (
            f"the aggregate's condition {normalized(missing)} is not one of the outer block's too: the window "
            "would see other rows than the aggregate"
        )
    return "the same relations are read, but the correlation is on other columns (or on columns of other types)"


def outer_columns(select: exp.Select, aliases: set[str]) -> list[tuple[str, str]]:
    """(alias, column) of the block's FROM items read anywhere in it (subqueries included, unless
    one defines a relation of that alias itself), first seen first."""
    out: list[tuple[str, str]] = []
    for column in select.find_all(exp.Column):
        if (
            column.table in aliases
            and (column.table, column.name) not in out
            and not shadowed(column, select, {column.table})
        ):
            out.append((column.table, column.name))
    return out


def rewrite_whole_block(
    expression,
    select: exp.Select,
    wrapper: exp.Expression,
    projection: exp.Expression,
    mapping: dict[str, str],
    keys: list[tuple[str, str]],
    direct: bool,
) -> None:
    """FROM and the conjuncts without subqueries move into a derived table that adds the window;
    the block reads that table, and its subquery conjuncts compare with the window's column."""
    aliases = {i.alias_or_name for i in from_items(select)}
    window_alias, value_name = fresh_names(expression, 2)
    partition = [exp.column(n, table=t) for t, n in keys]
    value = over(renamed_all(projection, mapping), partition)
    if direct:
        value = null_for_null_keys(value, partition)
    wrapper.replace(exp.paren(exp.column(value_name, table=window_alias)))
    where = select.args.get("where")
    stay, move = [], []  # conjuncts with a subquery (this one's now the window's column) stay outside
    for c in conjuncts(where.this if where else None):
        reads_window = any(col.table == window_alias for col in c.find_all(exp.Column))
        (stay if reads_window or c.find(exp.Select) is not None else move).append(c)
    inner = exp.Select(from_=select.args["from_"], joins=select.args.get("joins"))
    if move:
        inner.set("where", exp.Where(this=exp.and_(*move)))
    select.set("joins", None)
    select.set("from_", None)
    select.set("where", exp.Where(this=exp.and_(*stay)) if stay else None)
    carried = outer_columns(select, aliases)
    taken = {value_name.lower()}
    names: dict[tuple[str, str], str] = {}
    for table, column in carried:
        name = column if column.lower() not in taken else f"{table}_{column}"
        while name.lower() in taken:
            name += "_"
        taken.add(name.lower())
        names[(table, column)] = name
    replace_columns(select, {(t.lower(), c.lower()): exp.column(n, table=window_alias) for (t, c), n in names.items()})
    inner.set("expressions", [exp.column(c, table=t).as_(n) for (t, c), n in names.items()] + [value.as_(value_name)])
    select.set("from_", exp.From(this=inner.subquery(window_alias)))


def correlated_to(alias: str, name: str, column: exp.Column, outer: Scope, outer_conjuncts, schema) -> str | None:
    """'direct' when the outer column is alias.name, 'equated' when an outer conjunct equates them
    (and both have the same type: equality across types is not transitive), else None."""
    if column.table == alias and column.name == name:
        return "direct"
    for predicate in outer_conjuncts:
        if (
            isinstance(predicate, exp.EQ)
            and isinstance(predicate.this, exp.Column)
            and isinstance(predicate.expression, exp.Column)
        ):
            sides = {(c.table, c.name) for c in (predicate.this, predicate.expression)}
            if sides == {(alias, name), (column.table, column.name)}:
                a, b = type_of(outer, alias, name, schema), type_of(outer, column.table, column.name, schema)
                if a is not None and a == b:
                    return "equated"
    return None


def type_of(scope: Scope, alias: str, name: str, schema) -> str | None:
    ident = identity(scope, alias)
    if ident is None or ident[0] != "table":
        return None
    db, _, table = ident[1].rpartition(".")
    for d, tables in schema.items():
        if d.lower() != db:
            continue
        for t, columns in tables.items():
            if t.lower() == table:
                for c, ty in columns.items():
                    if c.lower() == name.lower():
                        return ty.lower()
    return None
