"""Whether a query reads one relation with no join and no subquery, told from its tokens alone.

Every rule works on joins or on subqueries (DESIGN.md), so such a query is passed through before
anything else: no parse, no catalog read, no statistics. Tokens are what the parser would read
(comments and string literals are single tokens, so a `join` in either is not a join), and the
test says True only when it is sure: one SELECT, or a leading WITH whose CTEs are each one SELECT
(dbt's import-CTE style: `with source as (select * from x), renamed as (select ... from source)
select * from renamed`, each reading the one before); any other SELECT (a subquery, a derived
table, a set operation's second branch, a recursive CTE) says False; no JOIN, LATERAL or APPLY;
and no comma in a FROM clause outside parentheses (a comma join). Anything it cannot tokenize
is left to the parser.

Why not parse: under dbt's threads the parse of a staging view (1-3 ms alone) took 3-15 ms,
sharing the GIL with the other threads' work, on every build of a model no rule can touch.

>>> reads_one_relation("select a, b from db.t where a > 1 group by a, b")
True
>>> reads_one_relation("select a from db.t, db.u where t.k = u.k")
False
>>> reads_one_relation("select a from db.t join db.u on t.k = u.k")
False
>>> reads_one_relation("select a from db.t where a in (select k from db.u)")
False
>>> reads_one_relation("select 'a join b' as s, f(x, y) from range(0, 10) -- join here\\n")
True
>>> reads_one_relation("with source as (select * from db.t), renamed as (select a as b from source) "
...                    "select * from renamed")
True
>>> reads_one_relation("with s as (select * from db.t) select * from s join db.u on s.k = u.k")
False
"""

from __future__ import annotations

from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from dbt.adapters.hiveopt.optimizer.dialect import DIALECT

# Tokens that may bring a second relation into a single SELECT.
_SECOND_RELATION = {TokenType.JOIN, TokenType.LATERAL, TokenType.APPLY, TokenType.CROSS, TokenType.NATURAL}
# Clauses that end a FROM clause (commas after them are not joins).
AFTER_FROM = {
    TokenType.WHERE,
    TokenType.GROUP_BY,
    TokenType.HAVING,
    TokenType.ORDER_BY,
    TokenType.LIMIT,
    TokenType.WINDOW,
    TokenType.QUALIFY,
    TokenType.CLUSTER_BY,
    TokenType.DISTRIBUTE_BY,
    TokenType.SORT_BY,
}


def reads_one_relation(sql: str) -> bool:
    """True when `sql` is one SELECT over one relation, or a chain of CTEs each one SELECT over one
    relation, with no join and no subquery."""
    try:
        tokens = DIALECT().tokenize(sql)
    except (SqlglotError, ValueError):
        return False
    main = False  # the query's own SELECT (after its CTEs) has come
    ctes = False  # in a leading WITH, before that SELECT
    depth = 0
    from_depth: int | None = None  # the depth of the FROM clause while in it
    before: list[TokenType | None] = [None, None]  # the two tokens before this one
    for token in tokens:
        kind = token.token_type
        if kind == TokenType.WITH:
            if main or ctes or depth or before[1] is not None:
                return False  # a WITH anywhere but at the start
            ctes = True
        elif kind == TokenType.RECURSIVE:
            return False
        elif kind == TokenType.SELECT:
            if depth == 0 and not main:
                main, ctes = True, False
            elif not (ctes and depth == 1 and before == [TokenType.ALIAS, TokenType.L_PAREN]):
                return False  # not a CTE's body (`name AS (SELECT`): a second SELECT
        elif kind in _SECOND_RELATION:
            return False
        elif kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
            if from_depth is not None and depth < from_depth:
                from_depth = None  # the FROM of a function, extract(year FROM d), or a CTE has ended
        elif kind == TokenType.FROM:
            from_depth = depth
        elif from_depth is not None and depth == from_depth:
            if kind == TokenType.COMMA:
                return False
            if kind in AFTER_FROM:
                from_depth = None
        before = [before[1], kind]
    return main
