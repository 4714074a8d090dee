"""Small facts about query blocks that several rules and the report share.

>>> import sqlglot
>>> user_join_hint(sqlglot.parse_one("SELECT /*+ MERGE(b) */ * FROM a JOIN b ON a.k = b.k", read="spark"))
True
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

# Join-strategy hints Spark knows; any of them in a block means the user chose: rules stay out.
JOIN_HINT_NAMES = frozenset(
    {
        "BROADCAST",
        "BROADCASTJOIN",
        "MAPJOIN",
        "MERGE",
        "SHUFFLE_MERGE",
        "MERGEJOIN",
        "SHUFFLE_HASH",
        "SHUFFLE_REPLICATE_NL",
    }
)


def user_join_hint(select: exp.Select) -> bool:
    hint = select.args.get("hint")
    return hint is not None and any(
        isinstance(item, (exp.JoinHint, exp.Anonymous)) and item.name.upper() in JOIN_HINT_NAMES
        for item in hint.expressions
    )


def block_label(scope: Scope) -> str:
    """How the report names a block: root, cte NAME, derived table ALIAS, subquery."""
    if scope.is_root:
        return "root"
    if scope.is_cte:
        return f"cte {scope.expression.parent.alias_or_name}"
    if scope.is_derived_table:
        return f"derived table {scope.expression.parent.alias_or_name}"
    return "subquery" if scope.is_subquery else "block"


def join_blocks(expression: exp.Expression, log) -> Iterator[tuple[Scope, exp.Select, str]]:
    """Every SELECT block with joins, innermost first, as (scope, select, label); a block with a
    join hint the user wrote is skipped, and the skip recorded in the rule's log."""
    for scope in traverse_scope(expression):
        select = scope.expression
        if not isinstance(select, exp.Select) or not select.args.get("joins"):
            continue
        label = block_label(scope)
        if user_join_hint(select):
            log.skipped(
                "the block has a join hint (the user's, or an earlier rule's): its joins stay as they are", block=label
            )
            continue
        yield scope, select, label
