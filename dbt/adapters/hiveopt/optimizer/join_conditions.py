"""One shape for inner joins, whatever the syntax: an equi-join condition written in WHERE (comma
joins, `FROM a, b WHERE a.k = b.k`, as much hand-written SQL and TPC-H are) moves to the ON of the
join where its second relation enters, so every rule finds a join's keys in one place. USING is
already an ON after qualification. Nothing moves in a block with a RIGHT or FULL join (a WHERE
condition there also removes the rows those joins add with NULLs), and only plain equalities of
two columns of two relations of the block move: for inner joins a condition in ON and in WHERE
keep the same rows.

A key every branch of an OR repeats is a key too (TPC-H Q19: `WHERE (p_partkey = l_partkey AND
...) OR (p_partkey = l_partkey AND ...) OR ...`): `(k AND x) OR (k AND y)` is `k AND (x OR y)` in
SQL's three-valued logic as in two-valued, and Spark's optimizer takes the key out the same way
(BooleanSimplification) and hash-joins on it.

>>> import sqlglot
>>> select = sqlglot.parse_one("SELECT * FROM a, b, c WHERE a.k = b.k AND c.j = b.j AND a.v > 1")
>>> conditions_into_on(select).sql()
'SELECT * FROM a JOIN b ON a.k = b.k JOIN c ON c.j = b.j WHERE a.v > 1'
>>> q19_like = "SELECT * FROM a, b WHERE (a.k = b.k AND a.v = 1) OR (b.k = a.k AND b.w = 2)"
>>> conditions_into_on(sqlglot.parse_one(q19_like)).sql()
'SELECT * FROM a JOIN b ON a.k = b.k WHERE a.v = 1 OR b.w = 2'
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.syntax import conjuncts, deterministic, disjuncts, equi_pair, nested_join


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
    for predicate in [part for c in conjuncts(where.this) for part in keys_out_of_or(c)]:
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


def keys_out_of_or(predicate: exp.Expression) -> list[exp.Expression]:
    """`predicate` as conjuncts, with the equi-join conditions every branch of an OR has taken out
    of it: `(k AND x) OR (k AND y)` gives `[k, x OR y]`. Anything else, or an OR where some branch
    would be left empty, or one with a subquery or a non-deterministic function (evaluated a
    different number of times once moved), is `[predicate]` as it is.

    >>> import sqlglot
    >>> [p.sql() for p in keys_out_of_or(sqlglot.parse_one("(a.k = b.k AND a.v = 1) OR (a.k = b.k AND b.w < 2)"))]
    ['a.k = b.k', 'a.v = 1 OR b.w < 2']
    >>> [p.sql() for p in keys_out_of_or(sqlglot.parse_one("(a.k = b.k AND a.v = 1) OR b.w < 2"))]
    ['(a.k = b.k AND a.v = 1) OR b.w < 2']
    """
    ors = disjuncts(predicate)
    if len(ors) < 2 or predicate.find(exp.Select) is not None or not deterministic(predicate):
        return [predicate]
    branches = [[(_key_of(c), c) for c in conjuncts(branch)] for branch in ors]
    keyed = [{key: c for key, c in branch if key} for branch in branches]
    common = set.intersection(*(set(k) for k in keyed))
    if not common:
        return [predicate]
    rests = [[c for key, c in branch if key not in common] for branch in branches]
    if not all(rests):  # `k OR (k AND y)` is k: rare, left as written
        return [predicate]
    keys = [c.copy() for key, c in keyed[0].items() if key in common]
    rest = exp.or_(*[exp.and_(*[c.copy() for c in r], copy=False) for r in rests], copy=False)
    return [*keys, rest]


def _key_of(predicate: exp.Expression) -> frozenset[str] | None:
    """An equi-join condition by its two columns, whichever side each is written on."""
    pair = equi_pair(predicate)
    return frozenset(column.sql() for column in pair) if pair else None
