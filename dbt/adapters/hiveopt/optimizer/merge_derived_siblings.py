"""Derived tables of one block that aggregate the same input under different filters, merged into
one pass with FILTER clauses (rules/merge_sibling_aggregates.py; TPC-DS q28 / q88 shapes):
detected per block (`DerivedSiblings`, or a Skip saying why not), then merged.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from dbt.adapters.hiveopt.optimizer.cost_model import CostModel
from dbt.adapters.hiveopt.optimizer.decisions import DecisionLog, Skip
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.filter_clauses import (
    evaluate_filters_once,
    shared_where,
    sibling_problem,
    with_filter,
)
from dbt.adapters.hiveopt.optimizer.group_by_distinct_first import ColumnType, group_by_distinct_first
from dbt.adapters.hiveopt.optimizer.syntax import (
    block_conjuncts,
    conjuncts,
    drop_conjuncts,
    fresh_names,
    from_items,
    non_inner_join,
    normalized,
    remove_item,
    replace_columns,
)

# Merges per query at most: one per walk over the scopes, which a merge changes.
MAX_REWRITES = 16


class DerivedSibling:
    """One derived table of a block that aggregates: its input, keys and filter."""

    def __init__(self, alias: str, scope: Scope):
        self.alias, self.scope, self.select = alias, scope, scope.expression
        group = self.select.args.get("group")
        self.keys: list[exp.Expression] = list(group.expressions) if group else []
        where = self.select.args.get("where")
        self.conjuncts = conjuncts(where.this if where else None)
        joins = self.select.args.get("joins") or []
        self.input = " ".join(normalized(n) for n in [self.select.args["from_"], *joins])
        self.key_sql = tuple(normalized(k) for k in self.keys)

    def key_outputs(self) -> dict[str, str]:
        """key SQL -> the output name this sibling gives it."""
        out = {}
        for projection in self.select.selects:
            body = projection.unalias()
            if not body.find(exp.AggFunc) and normalized(body) in self.key_sql:
                out.setdefault(normalized(body), projection.alias_or_name)
        return out


@dataclass
class DerivedSiblings:
    """The candidate: siblings of one block to merge, and the block's join conditions on their
    keys (which the merge drops)."""

    select: exp.Select
    members: list[DerivedSibling]
    equalities: list[exp.Expression]
    label: str
    key_sql: tuple[str, ...]


def merge_derived_siblings(
    expression: exp.Expression,
    estimator: Estimator,
    cost_model: CostModel,
    log: DecisionLog,
    distinct_first: bool = True,
) -> None:
    """Merge derived-table siblings, one group at a time (each group decided once), until none is
    left; `distinct_first`: a scalar pass with FILTERed DISTINCT counts may take the two-level form
    (group_by_distinct_first)."""
    decided: set[str] = set()
    for _ in range(MAX_REWRITES):
        if not _merge_once(expression, estimator, cost_model, log, decided, distinct_first):
            break


def _merge_once(
    expression: exp.Expression,
    estimator: Estimator,
    cost_model: CostModel,
    log: DecisionLog,
    decided: set[str],
    distinct_first: bool,
) -> bool:
    """Merge the first group of siblings not decided yet that can be merged; True when one was."""
    for scope in traverse_scope(expression):
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        for (_input, key_sql), members in _sibling_groups(scope).items():
            if len(members) < 2:
                continue
            label = f"siblings {', '.join(m.alias for m in members)}"
            key = f"{label}:{normalized(select)}"
            if key in decided:
                continue
            decided.add(key)
            candidate = _analyse(select, members, label, key_sql)
            if isinstance(candidate, Skip):
                candidate.record_in(log)
                continue
            estimator = estimator.over(expression)
            saved = _saved_bytes(estimator, cost_model, candidate.members)
            two_level = _merge(expression, candidate, estimator, distinct_first)
            log.fired(
                f"{len(candidate.members)} aggregations of one input "
                f"({'per ' + ', '.join(key_sql) if key_sql else 'one row each'})"
                " -> one pass with FILTER clauses"
                + (", grouped by the DISTINCT expression first" if two_level else ""),
                candidate=label,
                siblings=[m.alias for m in candidate.members],
                keys=list(key_sql),
                recompute_bytes_saved=saved,
                form="two-level DISTINCT" if two_level else "FILTER clauses",
            )
            return True
    return False


def _sibling_groups(scope: Scope) -> dict[tuple[str, tuple], list[DerivedSibling]]:
    """The block's aggregating derived tables by (input, grouping keys)."""
    groups: dict[tuple[str, tuple], list[DerivedSibling]] = {}
    for alias, (node, source) in scope.selected_sources.items():
        if not (isinstance(source, Scope) and source.is_derived_table and isinstance(node.parent, exp.Subquery)):
            continue
        inner = source.expression
        if (
            not isinstance(inner, exp.Select)
            or not inner.args.get("from_")
            or not any(p.find(exp.AggFunc) for p in inner.selects)
        ):
            continue
        sibling = DerivedSibling(alias, source)
        groups.setdefault((sibling.input, sibling.key_sql), []).append(sibling)
    return groups


def _analyse(
    select: exp.Select, members: list[DerivedSibling], label: str, key_sql: tuple[str, ...]
) -> DerivedSiblings | Skip:
    for member in members:
        problem = sibling_problem(member.select)
        if problem:
            return Skip(problem.reason, candidate=label)
    join = non_inner_join(select)
    if join:
        return Skip(f"the block has a {join}: siblings are merged under inner or cross joins only", candidate=label)
    equalities = _key_equalities(select, members, label) if members[0].keys else []
    if isinstance(equalities, Skip):
        return equalities
    return DerivedSiblings(select, members, equalities, label, key_sql)


def _key_equalities(select: exp.Select, members: list[DerivedSibling], label: str) -> list[exp.Expression] | Skip:
    """The block's equalities that join each sibling to an earlier one on every grouping key."""
    outputs = [m.key_outputs() for m in members]
    if any(set(o) != set(members[0].key_sql) for o in outputs):
        return Skip("a sibling does not output every grouping key: they cannot be joined on it", candidate=label)
    equalities: list[exp.Expression] = []
    accepted = [0]
    conj = block_conjuncts(select)
    for i in range(1, len(members)):
        for key in members[0].key_sql:
            match = None
            for predicate in conj:
                if (
                    isinstance(predicate, exp.EQ)
                    and isinstance(predicate.this, exp.Column)
                    and isinstance(predicate.expression, exp.Column)
                ):
                    ends = {(c.table, c.name) for c in (predicate.this, predicate.expression)}
                    for j in accepted:
                        if ends == {(members[i].alias, outputs[i][key]), (members[j].alias, outputs[j][key])}:
                            match = predicate
            if match is None:
                return Skip(
                    "the siblings are not joined on every grouping key: their join is not one pass per key",
                    candidate=label,
                )
            equalities.append(match)
        accepted.append(i)
    return equalities


def _saved_bytes(estimator: Estimator, cost_model: CostModel, members: list[DerivedSibling]) -> float | None:
    try:
        cost = cost_model.compute(estimator, members[0].scope)
    except Exception:  # the figure is for the record only
        return None
    return None if cost.is_absent else round(cost.value * (len(members) - 1))


def _merge(expression: exp.Expression, candidate: DerivedSiblings, estimator: Estimator, distinct_first: bool) -> bool:
    """Merge the siblings into one derived table; True when its DISTINCT counts took the two-level form."""
    first = candidate.members[0]
    where, rests = shared_where([m.conjuncts for m in candidate.members])
    projections, mapping = _projections(expression, candidate.members, rests)
    merged = _merged_pass(first, projections, where, rests)
    final: exp.Select = merged
    if distinct_first and not first.keys:
        two_level = group_by_distinct_first(merged, _column_types(merged, estimator), expression)
        final = two_level if isinstance(two_level, exp.Select) else merged
    if final is merged:
        evaluate_filters_once(merged, expression)
    first.select.parent.replace(final.subquery(first.alias))
    drop_conjuncts(candidate.select, candidate.equalities)
    for member in candidate.members[1:]:
        remove_item(candidate.select, member.alias)
    replace_columns(candidate.select, mapping)
    return final is not merged


def _projections(
    expression: exp.Expression, members: list[DerivedSibling], rests: list[exp.Expression | None]
) -> tuple[list[exp.Expression], dict[tuple[str, str], exp.Expression]]:
    """The merged pass's outputs (the keys once, then every sibling's aggregates under its FILTER
    clause, renamed where names collide) and what each sibling's output becomes in the block."""
    first = members[0]
    key_outputs = first.key_outputs() if first.keys else {}
    projections: list[exp.Expression] = []
    mapping: dict[tuple[str, str], exp.Expression] = {}
    used: set[str] = set()
    for key_sql, name in key_outputs.items():
        projections.append(exp.alias_(next(k for k in first.keys if normalized(k) == key_sql).copy(), name, copy=False))
        used.add(name.lower())
    extra = iter(fresh_names(expression, sum(len(m.select.selects) for m in members)))
    for member, rest in zip(members, rests):
        member_keys = member.key_outputs()
        for projection in member.select.selects:
            body, name = projection.unalias(), projection.alias_or_name
            if not body.find(exp.AggFunc) and normalized(body) in member_keys:
                mapping[(member.alias.lower(), name.lower())] = exp.column(
                    key_outputs[normalized(body)], table=first.alias
                )
                continue
            out = name if name.lower() not in used else next(extra)
            used.add(out.lower())
            projections.append(exp.alias_(with_filter(body, rest), out, copy=False))
            mapping[(member.alias.lower(), name.lower())] = exp.column(out, table=first.alias)
    return projections, mapping


def _merged_pass(
    first: DerivedSibling,
    projections: list[exp.Expression],
    where: list[exp.Expression],
    rests: list[exp.Expression | None],
) -> exp.Select:
    """One aggregate over the first sibling's input: the shared WHERE and, per key, no NULL key and
    only keys every sibling had rows of."""
    merged = exp.Select(expressions=projections, **{k: first.select.args[k].copy() for k in ("from_",)})
    if first.select.args.get("joins"):
        merged.set("joins", [j.copy() for j in first.select.args["joins"]])
    if first.keys:
        merged.set("group", first.select.args["group"].copy())
        where += [k.copy().is_(exp.null()).not_() for k in first.keys]  # the inner join drops NULL keys
        having = [
            exp.GT(
                this=exp.Filter(this=exp.Count(this=exp.Star()), expression=exp.Where(this=r.copy())),
                expression=exp.Literal.number(0),
            )
            for r in rests
            if r is not None
        ]
        if having:  # a key is kept only where every sibling had rows of it
            merged.set("having", exp.Having(this=exp.and_(*having, copy=False)))
    if where:
        merged.set("where", exp.Where(this=exp.and_(*where, copy=False)))
    return merged


def _column_types(select: exp.Select, estimator: Estimator) -> ColumnType:
    """A column's type from the schema, for columns of the block's tables (None for anything else)."""
    tables = {}
    for item in from_items(select):
        if isinstance(item, exp.Table) and item.db:
            tables[item.alias_or_name.lower()] = estimator.schema.get(item.db.lower(), {}).get(item.name.lower(), {})
    return lambda column: tables.get(column.table.lower(), {}).get(column.name.lower())
