"""One shape for inner joins, whatever the syntax: an equi-join condition written in WHERE (comma
joins, `FROM a, b WHERE a.k = b.k`, as much hand-written SQL and TPC-H are) moves to the ON of the
join where its second relation enters, so every rule finds a join's keys in one place. USING is
already an ON after qualification. Nothing moves in a block with a RIGHT or FULL join (a WHERE
condition there also removes the rows those joins add with NULLs), and only plain equalities of
two columns of two relations of the block move: for inner joins a condition in ON and in WHERE
keep the same rows.

>>> import sqlglot
>>> select = sqlglot.parse_one("SELECT * FROM a, b, c WHERE a.k = b.k AND c.j = b.j AND a.v > 1")
>>> conditions_into_on(select).sql()
'SELECT * FROM a JOIN b ON a.k = b.k JOIN c ON c.j = b.j WHERE a.v > 1'
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.syntax import conjuncts, equi_pair, nested_join


def conditions_into_on(expression: exp.Expression) -> exp.Expression:
    """Move, in every SELECT block of `expression` (in place), the WHERE equi-join conditions of
    inner joins to their join's ON; returns `expression`."""
    for select in list(expression.find_all(exp.Select)):
        _move(select)
    return expression


def _move(select: exp.Select) -> None:
    joins = select.args.get("joins") or []
    where, source = select.args.get("where"), select.args.get("from_")
    if not joins or where is None or source is None:
        return
    items = [source.this, *(j.this for j in joins)]
    if any(nested_join(item) is not None for item in items):
        return
    if any((j.side or "").upper() in ("RIGHT", "FULL") for j in joins):
        return
    position = {item.alias_or_name: i for i, item in enumerate(items)}
    if len(position) != len(items):  # two items under one name: leave the block alone
        return
    moved, kept = {}, []
    for predicate in conjuncts(where.this):
        target = _join_of(predicate, position, joins)
        if target is None:
            kept.append(predicate)
        else:
            moved.setdefault(target, []).append(predicate)
    if not moved:
        return
    for i, predicates in moved.items():
        join = joins[i]
        on = join.args.get("on")
        join.set("on", exp.and_(*([on] if on is not None else []), *predicates, copy=False))
        if (join.kind or "").upper() == "CROSS":  # `CROSS JOIN b ON ...` is the inner join on it
            join.set("kind", None)
    select.set("where", exp.Where(this=exp.and_(*kept, copy=False)) if kept else None)


def _join_of(predicate: exp.Expression, position: dict[str, int], joins: list[exp.Join]) -> int | None:
    """The index of the join whose ON `predicate` belongs to: the join where the later of its two
    relations enters, when that join is an inner one; None to keep it in WHERE."""
    pair = equi_pair(predicate)
    if pair is None or predicate.find(exp.Subquery, exp.Select) is not None:
        return None
    where = [position.get(column.table) for column in pair]
    if None in where or where[0] == where[1]:
        return None
    index = max(where) - 1  # items[0] is FROM's: join i brings items[i + 1]
    join = joins[index]
    side, kind = (join.side or "").upper(), (join.kind or "").upper()
    if side or kind not in ("", "INNER", "CROSS") or join.args.get("using"):
        return None
    return index
