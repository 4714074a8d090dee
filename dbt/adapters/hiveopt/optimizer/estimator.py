"""Cardinality estimation over a qualified query (System R / Selinger, textbook formulas): the
rows of every block from its sources, predicates (selectivity.py), joins (join_cardinality) and
GROUP BY (min(product of NDVs, input rows)). An estimate built on an absent statistic stays
absent: rules then decline to fire instead of guessing "small".

>>> from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
>>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
>>> schema = {"db": {"t": {"k": "int", "s": "string"}}}
>>> stats = StatsCatalog.from_dict({"db.t": {"row_count": 1000, "columns": {"k": {"ndv": 100, "min": 1, "max": 100}}}})
>>> q = prepare_query("SELECT k FROM db.t WHERE k = 5", schema).expression
>>> Estimator(q, schema, stats).estimate(q).rows.value
10.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from dbt.adapters.hiveopt.optimizer.relation_estimates import (
    TYPE_WIDTHS,
    ColumnEstimate,
    RelationEstimate,
    cap_ndv,
    column_width,
)
from dbt.adapters.hiveopt.optimizer.selectivity import (
    DEFAULT_HAVING_SELECTIVITY,
    DEFAULT_SELECTIVITY,
    DEFAULT_SEMI_JOIN_SELECTIVITY,
    conjunction_selectivity,
    filtered,
    literal_value,
    selectivity,
)
from dbt.adapters.hiveopt.optimizer.spark_sizes import SparkSizes
from dbt.adapters.hiveopt.optimizer.statistics import (
    Estimate,
    Precision,
    StatsCatalog,
    TableStats,
)
from dbt.adapters.hiveopt.optimizer.syntax import (
    aliases_of,
    conjuncts,
    equi_pair,
    implied_filter,
    is_inner_join,
    nested_join,
    own_aggregate,
    source_alias,
)


def join_cardinality(
    left_rows: float, right_rows: float, divisors: Sequence[float | None], other_predicates: int = 0
) -> float:
    """Rows of an equi-join: |L| |R| divided by max(NDV_l, NDV_r) of each key pair, the two largest
    only (the keys of a multi-column join are correlated: dividing by every NDV underestimates).
    A pair without NDVs bounds the result by max(|L|, |R|) (a key/foreign-key guess); each other
    predicate across the two sides keeps DEFAULT_SELECTIVITY. The one formula for join sizes: the
    estimator and the join enumerator both use it.

    >>> join_cardinality(1000, 50, [100]), join_cardinality(1000, 50, [100, 10, 5]), join_cardinality(1000, 50, [None])
    (500.0, 50.0, 1000)
    """
    rows = left_rows * right_rows
    if divisors:
        known = sorted((max(d, 1.0) for d in divisors if d is not None), reverse=True)[:2]
        for divisor in known:
            rows /= divisor
        if len(known) < len(divisors):
            rows = min(rows, max(left_rows, right_rows))
        rows = max(rows, 1.0)
    if other_predicates:
        rows = max(rows * DEFAULT_SELECTIVITY**other_predicates, 1.0)
    return rows


def _name(column: exp.Column) -> str:
    return f"{column.table}.{column.name}".lower()


class Estimator:
    """Estimates rows and column statistics of every query block of one qualified query: the one
    source of row counts, widths and selectivities. The pipeline builds one per query and hands
    each rule a view of it over the tree the rule works on (`over`), which shares the normalized
    schema and the statistics."""

    def __init__(self, root: exp.Expression, schema: dict[str, dict[str, dict[str, str]]], statistics: StatsCatalog):
        self.schema = {
            db.lower(): {t.lower(): {c.lower(): ty for c, ty in cols.items()} for t, cols in ts.items()}
            for db, ts in schema.items()
        }
        self.statistics = statistics
        self.root = root
        self._scopes: dict[int, Scope] | None = None
        self._memo: dict[int, RelationEstimate] = {}
        self._filtered: dict[tuple, tuple[exp.Expression, list, list, RelationEstimate]] = {}
        self._inner_ons: dict[tuple, tuple[exp.Expression, list, list[exp.Expression]]] = {}
        self._spark_sizes: SparkSizes | None = None
        self.used: dict[str, dict[str, Any]] = {}  # statistics consulted, for the report
        # A table's estimate depends on its name only (its statistics and schema): made once per
        # query and shared by every view (`over`). Each rule estimates its own copy of the tree,
        # and building a wide table's column estimates again each time was a third of the time
        # the optimizer spent on TPC-DS models no rule rewrote.
        self._tables: dict[str, tuple[RelationEstimate, dict[str, Any]]] = {}

    def over(self, root: exp.Expression) -> Estimator:
        """An estimator for another tree of the same query (a rule's copy, or the tree after a
        rewrite): same schema and statistics, its own scopes and memo."""
        view = Estimator.__new__(Estimator)
        view.schema, view.statistics, view.root = self.schema, self.statistics, root
        view._scopes, view._memo, view.used, view._spark_sizes = None, {}, {}, None
        view._tables, view._filtered, view._inner_ons = self._tables, {}, {}
        return view

    @property
    def spark_sizes(self) -> SparkSizes:
        """Spark's own (static) sizes of this query's relations: what Spark broadcasts by itself."""
        if self._spark_sizes is None:
            self._spark_sizes = SparkSizes(self)
        return self._spark_sizes

    @property
    def scopes(self) -> dict[int, Scope]:
        """The query's scopes by their SELECT's id, built on first use."""
        if self._scopes is None:
            self._scopes = {id(s.expression): s for s in traverse_scope(self.root)}
        return self._scopes

    # -- sources ------------------------------------------------------------------------------
    def table(self, table: exp.Table) -> RelationEstimate:
        name = ".".join(p for p in (table.db, table.name) if p).lower()
        if name not in self._tables:
            self._tables[name] = self._table(table, name)
        relation, used = self._tables[name]
        self.used[name] = dict(used)
        return relation

    def _table(self, table: exp.Table, name: str) -> tuple[RelationEstimate, dict[str, Any]]:
        types = self.schema.get(table.db.lower(), {}).get(table.name.lower(), {}) if table.db else {}
        stats: TableStats | None = self.statistics.get(name)
        if stats is None:
            absent = {c: ColumnEstimate(width=column_width(t), data_type=t) for c, t in types.items()}
            return RelationEstimate(Estimate.absent(), absent), {"precision": "absent"}
        used = {"precision": stats.row_count.precision.name.lower(), "rows": stats.row_count.value}
        columns = {c: ColumnEstimate.from_stats(stats.column(c), stats.row_count, t) for c, t in types.items()}
        return RelationEstimate(stats.row_count, columns), used

    def source(self, scope: Scope, alias: str) -> RelationEstimate:
        source = scope.sources.get(alias)
        if isinstance(source, exp.Table):
            return self.table(source)
        if isinstance(source, Scope):
            return self.estimate(source.expression)
        return RelationEstimate(Estimate.absent())

    # -- queries -----------------------------------------------------------------------------
    def estimate(self, node: exp.Expression) -> RelationEstimate:
        key = id(node)
        if key not in self._memo:
            self._memo[key] = self._estimate(node)
        return self._memo[key]

    def _estimate(self, node: exp.Expression) -> RelationEstimate:
        if isinstance(node, exp.Subquery):
            return self.estimate(node.this)
        if isinstance(node, exp.SetOperation):
            left, right = self.estimate(node.left), self.estimate(node.right)
            if isinstance(node, exp.Union):
                rows = left.rows + right.rows
            elif isinstance(node, exp.Intersect):
                rows = left.rows.capped(right.rows)
            else:
                rows = left.rows
            return RelationEstimate(rows, dict(left.columns))
        if isinstance(node, exp.Select):
            return self.select(node)
        return RelationEstimate(Estimate.absent())

    def select(self, select: exp.Select) -> RelationEstimate:
        scope = self.scopes.get(id(select))
        if scope is None:
            return RelationEstimate(Estimate.absent())
        joined = self.join_block(scope)
        rows = joined.rows
        group = select.args.get("group")
        aggregated = bool(group) or any(own_aggregate(p) for p in select.selects)
        if group:
            rows = self.group_rows(joined, group.expressions, scope)
        elif aggregated and not select.args.get("distinct"):
            rows = Estimate.exact(1)
        if select.args.get("having"):
            rows = rows * DEFAULT_HAVING_SELECTIVITY
        if select.args.get("distinct"):
            rows = self.group_rows(joined, [p.unalias() for p in select.selects], scope)
        limit = select.args.get("limit")
        if limit is not None:
            ok, n = literal_value(limit.expression)
            if ok and isinstance(n, (int, float)):
                rows = rows.capped(Estimate.exact(n)) if not rows.is_absent else rows
        columns: dict[str, ColumnEstimate] = {}
        for projection in select.selects:
            inner = projection.unalias()
            if isinstance(inner, exp.Column):
                columns[projection.alias_or_name.lower()] = cap_ndv(joined.column(f"{inner.table}.{inner.name}"), rows)
            else:
                dtype = "bigint" if isinstance(inner, exp.Count) else None
                width = column_width(dtype) if dtype else Estimate.estimated(TYPE_WIDTHS["double"])
                columns[projection.alias_or_name.lower()] = ColumnEstimate(width=width, data_type=dtype)
        return RelationEstimate(rows, columns)

    def group_rows(
        self, relation: RelationEstimate, keys: list[exp.Expression], scope: Scope | None = None
    ) -> Estimate:
        """min(product of key NDVs, input rows); without every key's NDV, the input rows (no guess).
        Given the block's scope, the keys of one FROM item together have at most as many distinct
        values as that item has rows (GROUP BY o.orderkey, o.custkey: at most |orders| groups)."""
        per_alias: dict[str, float] = {}
        for key in keys:
            if isinstance(key, exp.Column):
                ndv = relation.column(f"{key.table}.{key.name}").ndv
            elif isinstance(key, exp.Literal):
                ndv = Estimate.exact(1)
            else:
                ndv = Estimate.absent()
            if ndv.is_absent:
                return relation.rows
            owner = key.table if isinstance(key, exp.Column) else ""
            per_alias[owner] = per_alias.get(owner, 1.0) * ndv.value
        product = Estimate.exact(1)
        for owner, value in per_alias.items():
            if scope is not None and owner and owner in scope.selected_sources:
                where = scope.expression.args.get("where")
                item_rows = self.filtered_source(scope, owner, conjuncts(where.this if where else None)).rows
                if not item_rows.is_absent:
                    value = min(value, item_rows.value)
            product = product * value
        return product.capped(relation.rows) if not relation.rows.is_absent else relation.rows

    # -- join blocks --------------------------------------------------------------------------
    def join_block(self, scope: Scope) -> RelationEstimate:
        """The FROM clause with its joins and WHERE applied, in written order."""
        steps = self.join_steps(scope)
        if not steps:
            return RelationEstimate(Estimate.exact(1))
        acc = steps[-1]
        # Predicates spanning relations that are not equi-join keys.
        where = scope.expression.args.get("where")
        for predicate in conjuncts(where.this if where else None):
            if len(aliases_of(predicate)) > 1 and not equi_pair(predicate):
                acc = RelationEstimate(acc.rows * self.selectivity(predicate, acc), acc.columns)
        return acc

    def join_steps(
        self, scope: Scope, first_node: exp.Expression | None = None, joins: list[exp.Join] | None = None
    ) -> list[RelationEstimate]:
        """Estimates after the first source and after each join, in written (left-deep) order;
        columns keyed `alias.column`. By default the block's FROM and joins; a nested join
        `(a JOIN b ON ...)` passes its own first relation and joins."""
        select = scope.expression
        if not scope.selected_sources:
            return []
        where = select.args.get("where")
        where_conjuncts = conjuncts(where.this if where else None)
        if first_node is None:
            first_node, joins = select.args.get("from_").this, select.args.get("joins") or []
        acc = self.relation_in_join(scope, first_node, where_conjuncts)
        steps = [acc]
        joined = {first_node.alias_or_name}
        for join in joins or []:
            alias = join.this.alias_or_name
            right = self.relation_in_join(scope, join.this, where_conjuncts)
            on = conjuncts(join.args.get("on"))
            if is_inner_join(join):
                # A comma join's keys are in WHERE: FROM a, b WHERE a.k = b.k is a join on k.
                on += [
                    p
                    for p in where_conjuncts
                    if equi_pair(p) and alias in aliases_of(p) and aliases_of(p) - {alias} <= joined
                ]
            acc = self.join(acc, right, alias, join, on)
            joined.add(alias)
            steps.append(acc)
        return steps

    def relation_in_join(
        self, scope: Scope, node: exp.Expression, where_conjuncts: list[exp.Expression]
    ) -> RelationEstimate:
        """One FROM/JOIN item with its local WHERE filters: a relation, or a nested join."""
        nested = nested_join(node)
        if nested is not None:
            return self.join_steps(scope, nested, nested.args.get("joins"))[-1]
        alias = node.alias_or_name
        return _prefixed(self.filtered_source(scope, alias, where_conjuncts), alias)

    def build_side(self, scope: Scope, alias: str, join: exp.Join | None = None) -> RelationEstimate:
        """One relation as a join's build side would hold it: its WHERE and ON filters applied
        (ON filters only when the join is inner or this is the null-supplying side)."""
        where = scope.expression.args.get("where")
        relation = _prefixed(self.filtered_source(scope, alias, conjuncts(where.this if where else None)), alias)
        if join is not None and (join.side or "").upper() in ("", "LEFT") and source_alias(join) == alias:
            local = [p for p in conjuncts(join.args.get("on")) if aliases_of(p) == {alias}]
            if local:
                relation = filtered(relation, local)
        return relation

    def filtered_source(self, scope: Scope, alias: str, conjuncts: list[exp.Expression]) -> RelationEstimate:
        """One source with the WHERE conjuncts that read only it applied (local predicates), and
        what the ORs over it and other relations (in WHERE, or in an inner join's ON) say of it.
        Memoized like `estimate` (by the nodes' identity, for this view's tree): the join steps,
        the build sides and the join trees ask for the same source with the same WHERE again and
        again. The memo holds the nodes it is keyed on, so their ids are not reused."""
        on = self._inner_on(scope.expression)
        key = (id(scope.expression), alias, *map(id, conjuncts), *map(id, on))
        if key not in self._filtered:
            self._filtered[key] = (scope.expression, conjuncts, on, self._filtered_source(scope, alias, conjuncts, on))
        return self._filtered[key][3]

    def _inner_on(self, select: exp.Expression) -> list[exp.Expression]:
        """`_inner_on_conjuncts` of the block, worked out once per set of ON clauses (the memo
        holds the clauses it is keyed on, so their ids are not reused)."""
        joins = (select.args.get("joins") or []) if isinstance(select, exp.Select) else []
        clauses = [join.args.get("on") for join in joins]
        key = (id(select), *map(id, clauses))
        if key not in self._inner_ons:
            self._inner_ons[key] = (select, clauses, _inner_on_conjuncts(joins))
        return self._inner_ons[key][2]

    def _filtered_source(
        self, scope: Scope, alias: str, conjuncts: list[exp.Expression], on: list[exp.Expression]
    ) -> RelationEstimate:
        relation = self.source(scope, alias)
        local = [p for p in conjuncts if aliases_of(p) == {alias}]
        # An OR over this relation and others, in WHERE or in an inner join's ON (where
        # reorder_joins writes it), filters it too, as Spark runs it (TPC-H Q7's nations, Q19's part).
        ors = [p for p in conjuncts if isinstance(p, exp.Or) and len(aliases_of(p)) > 1] + on
        implied = (implied_filter(p, alias) for p in ors)
        local += [p for p in implied if p is not None]
        if not local:
            return RelationEstimate(relation.rows, {k: cap_ndv(c, relation.rows) for k, c in relation.columns.items()})
        after = filtered(_prefixed(relation, alias), local)
        return RelationEstimate(
            after.rows, {k.split(".", 1)[1]: cap_ndv(c, after.rows) for k, c in after.columns.items()}
        )

    def join(
        self, left: RelationEstimate, right: RelationEstimate, alias: str, join: exp.Join, on: list[exp.Expression]
    ) -> RelationEstimate:
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        # ON conjuncts reading only the new relation filter it first (inner joins and the
        # null-supplying side of outer joins alike).
        local = [p for p in on if aliases_of(p) == {alias}]
        if local:
            right = filtered(right, local)
        keys = [pair for pair in (equi_pair(p) for p in on) if pair]
        rows = self.join_rows(left, right, keys)
        other = [p for p in on if not equi_pair(p) and len(aliases_of(p)) > 1]
        for predicate in other:
            rows = rows * self.selectivity(predicate, RelationEstimate(rows, {**left.columns, **right.columns}))
        if kind in ("SEMI", "ANTI"):
            match = Estimate.estimated(DEFAULT_SEMI_JOIN_SELECTIVITY)
            if keys and not left.rows.is_absent and not rows.is_absent and left.rows.value:
                match = Estimate.estimated(min(1.0, rows.value / left.rows.value))
            share = match if kind == "SEMI" else Estimate.estimated(1.0) + match * -1
            return RelationEstimate(left.rows * share, left.columns)
        if side == "LEFT":
            rows = _max(rows, left.rows)
        elif side == "RIGHT":
            rows = _max(rows, right.rows)
        elif side == "FULL":
            rows = _max(rows, left.rows + right.rows)
        columns = {**left.columns, **right.columns}
        return RelationEstimate(rows, {k: cap_ndv(c, rows) for k, c in columns.items()})

    def join_rows(
        self, left: RelationEstimate, right: RelationEstimate, keys: list[tuple[exp.Column, exp.Column]]
    ) -> Estimate:
        """The rows of an equi-join of two relations on these key pairs (see join_cardinality)."""
        if left.rows.is_absent or right.rows.is_absent:
            return Estimate.absent()
        if not keys:
            return left.rows * right.rows
        divisors = []
        for a, b in keys:
            ca = left.column(_name(a)) if _name(a) in left.columns else right.column(_name(a))
            cb = right.column(_name(b)) if _name(b) in right.columns else left.column(_name(b))
            divisors.append(None if ca.ndv.is_absent or cb.ndv.is_absent else max(ca.ndv.value, cb.ndv.value))
        rows = join_cardinality(left.rows.value, right.rows.value, divisors)
        return Estimate.of(rows, min((left.rows * right.rows).precision, Precision.ESTIMATED))

    # -- predicates (see selectivity.py) ------------------------------------------------------
    def conjunction_selectivity(self, predicates: list[exp.Expression], relation: RelationEstimate) -> float:
        return conjunction_selectivity(predicates, relation)

    def selectivity(self, predicate: exp.Expression, relation: RelationEstimate) -> float:
        return selectivity(predicate, relation)


def _inner_on_conjuncts(joins: list[exp.Join]) -> list[exp.Expression]:
    """The ON conjuncts of a block's inner joins that are an OR over several relations: a row
    the block returns passed each of them."""
    return [
        p
        for join in joins
        if is_inner_join(join)
        for p in conjuncts(join.args.get("on"))
        if isinstance(p, exp.Or) and len(aliases_of(p)) > 1
    ]


def _max(a: Estimate, b: Estimate) -> Estimate:
    if a.is_absent or b.is_absent:
        return Estimate.absent()
    return a if a.value >= b.value else Estimate(b.value, min(a.precision, b.precision))


def _prefixed(relation: RelationEstimate, alias: str) -> RelationEstimate:
    return RelationEstimate(relation.rows, {f"{alias}.{k}".lower(): c for k, c in relation.columns.items()})
