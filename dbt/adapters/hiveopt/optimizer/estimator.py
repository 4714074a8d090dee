"""Cardinality estimation over a qualified query (System R / Selinger, textbook formulas).

Equality selects 1/NDV (or a heavy hitter's own frequency), ranges read min/max or the
equi-height histogram, IN-lists add equalities, NULL tests read null counts, AND multiplies,
OR adds minus the overlap; an equi-join keeps |R||S|/max(NDV); a GROUP BY keeps
min(product of NDVs, input rows). Every default is a named constant below. An estimate built on
an absent statistic stays absent: rules then decline to fire instead of guessing "small".

>>> from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
>>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
>>> schema = {"db": {"t": {"k": "int", "s": "string"}}}
>>> stats = StatsCatalog.from_dict({"db.t": {"row_count": 1000, "columns": {"k": {"ndv": 100, "min": 1, "max": 100}}}})
>>> q = prepare_query("SELECT k FROM db.t WHERE k = 5", schema).expression
>>> Estimator(q, schema, stats).estimate(q).rows.value
10.0
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from dbt.adapters.hiveopt.optimizer.statistics import (
    ColumnStats,
    Estimate,
    Precision,
    StatsCatalog,
    TableStats,
)
from dbt.adapters.hiveopt.optimizer.syntax import (
    aliases_of,
    conjuncts,
    equi_pair,
    is_inner_join,
    nested_join,
    own_aggregate,
    source_alias,
)

# --- Defaults (named, in one place) -------------------------------------------------------
# Selinger's System R constants for predicates whose column statistics are absent.
DEFAULT_EQUALITY_SELECTIVITY = 0.1
DEFAULT_RANGE_SELECTIVITY = 1 / 3
DEFAULT_BETWEEN_SELECTIVITY = 0.25
DEFAULT_LIKE_SELECTIVITY = 0.1
DEFAULT_IS_NULL_SELECTIVITY = 0.05
# Any predicate we cannot analyse (functions of columns, subqueries, non-equi joins).
DEFAULT_SELECTIVITY = 1 / 3
# An IN-list never selects more than this without statistics.
DEFAULT_IN_MAX_SELECTIVITY = 0.5
# HAVING filters groups we know nothing about.
DEFAULT_HAVING_SELECTIVITY = 1 / 3
# A semi join keeps this share of the left side when key NDVs are absent.
DEFAULT_SEMI_JOIN_SELECTIVITY = 0.5
# Bytes per row Spark's UnsafeRow adds on top of the fields (header and null bits).
ROW_OVERHEAD_BYTES = 8
# Field widths by Spark type, as Spark's own defaultSize; strings use the gathered average length.
TYPE_WIDTHS = {
    "boolean": 1,
    "tinyint": 1,
    "byte": 1,
    "smallint": 2,
    "short": 2,
    "int": 4,
    "integer": 4,
    "bigint": 8,
    "long": 8,
    "float": 4,
    "double": 8,
    "date": 4,
    "timestamp": 8,
    "timestamp_ntz": 8,
    "decimal": 16,
}
DEFAULT_STRING_WIDTH = 20
DEFAULT_COMPLEX_WIDTH = 64


# --- Column and relation estimates ---------------------------------------------------------
@dataclass
class ColumnEstimate:
    ndv: Estimate = field(default_factory=Estimate.absent)
    null_fraction: Estimate = field(default_factory=Estimate.absent)
    width: Estimate = field(default_factory=Estimate.absent)
    min: Any = None
    max: Any = None
    data_type: str | None = None
    heavy_hitters: list[tuple[Any, float]] | None = None  # (value, fraction of rows)
    histogram: list[Any] | None = None

    @classmethod
    def from_stats(cls, stats: ColumnStats, rows: Estimate, data_type: str | None) -> ColumnEstimate:
        null_fraction = Estimate.absent()
        if not stats.null_count.is_absent and not rows.is_absent:
            null_fraction = Estimate(
                stats.null_count.value / rows.value if rows.value else 0.0,
                min(stats.null_count.precision, rows.precision),
            )
        hh = None
        if stats.heavy_hitters is not None and not rows.is_absent and rows.value:
            hh = [(v, c / rows.value) for v, c in stats.heavy_hitters]
        dtype = (data_type or stats.data_type or "").lower() or None
        return cls(
            ndv=stats.ndv,
            null_fraction=null_fraction,
            width=column_width(dtype, stats.avg_width),
            min=stats.min,
            max=stats.max,
            data_type=dtype,
            heavy_hitters=hh,
            histogram=stats.histogram,
        )


def column_width(data_type: str | None, avg_width: Estimate | None = None) -> Estimate:
    avg_width = avg_width if avg_width is not None else Estimate.absent()
    base = (data_type or "string").split("(")[0].strip().lower()
    if base in TYPE_WIDTHS:
        return Estimate.estimated(TYPE_WIDTHS[base])
    if base in ("string", "varchar", "char", "binary"):
        return avg_width if not avg_width.is_absent else Estimate.estimated(DEFAULT_STRING_WIDTH)
    return Estimate.estimated(DEFAULT_COMPLEX_WIDTH)


@dataclass
class RelationEstimate:
    rows: Estimate
    # by column name (lowercase) for a relation's output; by "alias.column" inside a join.
    columns: dict[str, ColumnEstimate] = field(default_factory=dict)

    def column(self, name: str) -> ColumnEstimate:
        return self.columns.get(name.lower()) or ColumnEstimate()

    def width(self, names: Iterable[str] | None = None) -> Estimate:
        """Row width in bytes of the named columns (all when None), Spark's row overhead included."""
        chosen = list(self.columns) if names is None else [n.lower() for n in names]
        total = Estimate.estimated(ROW_OVERHEAD_BYTES)
        for name in chosen:
            width = self.column(name).width
            total = total + (width if not width.is_absent else Estimate.estimated(DEFAULT_STRING_WIDTH))
        return total

    def bytes(self, names: Iterable[str] | None = None) -> Estimate:
        return self.rows * self.width(names)


def _cap_ndv(column: ColumnEstimate, rows: Estimate) -> ColumnEstimate:
    return replace(column, ndv=column.ndv.capped(rows)) if not column.ndv.is_absent else column


# --- Literal values, for ranges --------------------------------------------------------------
def _as_number(value: Any) -> float | None:
    """Numbers as they are, dates and timestamps as days since the epoch, anything else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, _dt.datetime):
        return value.timestamp() / 86400.0
    if isinstance(value, _dt.date):
        return float(value.toordinal() - 719163)
    if isinstance(value, str):
        text = value.strip()
        for fmt in ("%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f"):
            try:
                return _as_number(_dt.datetime.strptime(text, fmt))
            except ValueError:
                pass
        try:
            return float(text)
        except ValueError:
            return None
    return None


def literal_value(node: exp.Expression) -> tuple[bool, Any]:
    """(is a constant, its Python value) for literals, negated numbers, typed date literals."""
    if isinstance(node, exp.Paren):
        return literal_value(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return True, node.this
        try:
            return True, int(node.this)
        except ValueError:
            return True, float(node.this)
    if isinstance(node, exp.Neg):
        ok, value = literal_value(node.this)
        return (ok and isinstance(value, (int, float))), (-value if ok and isinstance(value, (int, float)) else None)
    if isinstance(node, exp.Boolean):
        return True, node.this
    if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, exp.Literal):
        return literal_value(node.this)
    if isinstance(node, (exp.Date, exp.TsOrDsToDate, exp.StrToDate)) and isinstance(node.this, exp.Literal):
        return literal_value(node.this)
    return False, None


def _same_value(a: Any, b: Any) -> bool:
    if a == b:
        return True
    na, nb = _as_number(a), _as_number(b)
    return na is not None and nb is not None and na == nb


# --- Selectivity -----------------------------------------------------------------------------
def _equality(column: ColumnEstimate, value: Any) -> float:
    if column.heavy_hitters:
        for hot, fraction in column.heavy_hitters:
            if _same_value(hot, value):
                return fraction
    if column.ndv.is_absent or not column.ndv.value:
        return DEFAULT_EQUALITY_SELECTIVITY
    non_null = 1.0 - (column.null_fraction.value if not column.null_fraction.is_absent else 0.0)
    hot = column.heavy_hitters or []
    rest_fraction = max(non_null - sum(f for _, f in hot), 0.0)
    rest_ndv = max(column.ndv.value - len(hot), 1.0)
    return min(rest_fraction / rest_ndv, 1.0) if hot else non_null / column.ndv.value


def _fraction_below(column: ColumnEstimate, value: Any) -> float | None:
    """Share of non-null rows with column < value, from the histogram, else from min/max."""
    v = _as_number(value)
    if v is None:
        return None
    bounds = [b for b in (_as_number(x) for x in (column.histogram or [])) if b is not None]
    if len(bounds) >= 2:
        if v <= bounds[0]:
            return 0.0
        if v > bounds[-1]:
            return 1.0
        buckets = len(bounds) - 1
        for i in range(buckets):
            lo, hi = bounds[i], bounds[i + 1]
            if lo <= v <= hi:
                within = (v - lo) / (hi - lo) if hi > lo else 0.5
                return (i + within) / buckets
    lo, hi = _as_number(column.min), _as_number(column.max)
    if lo is None or hi is None:
        return None
    if v <= lo:
        return 0.0
    if v > hi:
        return 1.0
    return (v - lo) / (hi - lo) if hi > lo else 0.5


def _non_null(column: ColumnEstimate) -> float:
    return 1.0 - (column.null_fraction.value if not column.null_fraction.is_absent else 0.0)


def _range(column: ColumnEstimate, op: str, value: Any) -> float:
    below = _fraction_below(column, value)
    if below is None:
        return DEFAULT_RANGE_SELECTIVITY
    share = below if op in ("<", "<=") else 1.0 - below
    if op in ("<=", ">="):
        share += _equality(column, value) if not column.ndv.is_absent else 0.0
    return max(min(share, 1.0), 0.0) * _non_null(column)


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_RANGE_OPS = {exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}


def join_cardinality(left_rows: float, right_rows: float, divisors: Sequence[float | None]) -> float:
    """Rows of an equi-join: |L| |R| divided by max(NDV_l, NDV_r) of each key pair, the two largest
    only (the keys of a multi-column join are correlated: dividing by every NDV underestimates).
    A pair without NDVs bounds the result by max(|L|, |R|) (a key/foreign-key guess). The one
    formula for join sizes: the estimator and the join enumerator both use it.

    >>> join_cardinality(1000, 50, [100]), join_cardinality(1000, 50, [100, 10, 5]), join_cardinality(1000, 50, [None])
    (500.0, 50.0, 1000)
    """
    if not divisors:
        return left_rows * right_rows
    rows = left_rows * right_rows
    known = sorted((max(d, 1.0) for d in divisors if d is not None), reverse=True)[:2]
    for divisor in known:
        rows /= divisor
    if len(known) < len(divisors):
        rows = min(rows, max(left_rows, right_rows))
    return max(rows, 1.0)


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
        self.used: dict[str, dict[str, Any]] = {}  # statistics consulted, for the report

    def over(self, root: exp.Expression) -> Estimator:
        """An estimator for another tree of the same query (a rule's copy, or the tree after a
        rewrite): same schema and statistics, its own scopes and memo."""
        view = Estimator.__new__(Estimator)
        view.schema, view.statistics, view.root = self.schema, self.statistics, root
        view._scopes, view._memo, view.used = None, {}, {}
        return view

    @property
    def scopes(self) -> dict[int, Scope]:
        """The query's scopes by their SELECT's id, built on first use."""
        if self._scopes is None:
            self._scopes = {id(s.expression): s for s in traverse_scope(self.root)}
        return self._scopes

    # -- sources ------------------------------------------------------------------------------
    def table(self, table: exp.Table) -> RelationEstimate:
        name = ".".join(p for p in (table.db, table.name) if p).lower()
        types = self.schema.get(table.db.lower(), {}).get(table.name.lower(), {}) if table.db else {}
        stats: TableStats | None = self.statistics.get(name)
        if stats is None:
            self.used[name] = {"precision": "absent"}
            return RelationEstimate(
                Estimate.absent(), {c: ColumnEstimate(width=column_width(t), data_type=t) for c, t in types.items()}
            )
        self.used[name] = {"precision": stats.row_count.precision.name.lower(), "rows": stats.row_count.value}
        columns = {c: ColumnEstimate.from_stats(stats.column(c), stats.row_count, t) for c, t in types.items()}
        return RelationEstimate(stats.row_count, columns)

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
                columns[projection.alias_or_name.lower()] = _cap_ndv(joined.column(f"{inner.table}.{inner.name}"), rows)
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
                relation = RelationEstimate(
                    relation.rows * self.conjunction_selectivity(local, relation), relation.columns
                )
        return relation

    def filtered_source(self, scope: Scope, alias: str, conjuncts: list[exp.Expression]) -> RelationEstimate:
        """One source with the WHERE conjuncts that read only it applied (local predicates)."""
        relation = self.source(scope, alias)
        local = [p for p in conjuncts if aliases_of(p) == {alias}]
        selectivity = self.conjunction_selectivity(local, _prefixed(relation, alias)) if local else 1.0
        rows = relation.rows * selectivity if selectivity != 1.0 else relation.rows
        return RelationEstimate(rows, {k: _cap_ndv(c, rows) for k, c in relation.columns.items()})

    def join(
        self, left: RelationEstimate, right: RelationEstimate, alias: str, join: exp.Join, on: list[exp.Expression]
    ) -> RelationEstimate:
        side, kind = (join.side or "").upper(), (join.kind or "").upper()
        # ON conjuncts reading only the new relation filter it first (inner joins and the
        # null-supplying side of outer joins alike).
        local = [p for p in on if aliases_of(p) == {alias}]
        if local:
            right = RelationEstimate(right.rows * self.conjunction_selectivity(local, right), right.columns)
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
        return RelationEstimate(rows, {k: _cap_ndv(c, rows) for k, c in columns.items()})

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

    # -- predicates ---------------------------------------------------------------------------
    def conjunction_selectivity(self, predicates: list[exp.Expression], relation: RelationEstimate) -> float:
        """AND of predicates. Range bounds on one column form one interval (a > x AND a < y is
        not two independent halves); everything else multiplies."""
        selectivity = 1.0
        bounds: dict[str, dict[str, list[tuple[Any, exp.Expression]]]] = {}
        for predicate in predicates:
            bound = _range_bound(predicate)
            if bound is None:
                selectivity *= self.selectivity(predicate, relation)
            else:
                key, side, value = bound
                bounds.setdefault(key, {"lower": [], "upper": []})[side].append((value, predicate))
        for key, sides in bounds.items():
            column = relation.column(key)
            lows = [v for v, _ in sides["lower"] if _as_number(v) is not None]
            highs = [v for v, _ in sides["upper"] if _as_number(v) is not None]
            below_hi = _fraction_below(column, min(highs, key=_as_number)) if highs else None
            below_lo = _fraction_below(column, max(lows, key=_as_number)) if lows else None
            if lows and highs and below_hi is not None and below_lo is not None:
                selectivity *= max(below_hi - below_lo, 0.0) * _non_null(column)
            else:
                for _, predicate in sides["lower"] + sides["upper"]:
                    selectivity *= self.selectivity(predicate, relation)
        return selectivity

    def selectivity(self, predicate: exp.Expression, relation: RelationEstimate) -> float:
        p = predicate.unnest() if isinstance(predicate, exp.Paren) else predicate
        if isinstance(p, exp.And):
            return self.conjunction_selectivity(conjuncts(p), relation)
        if isinstance(p, exp.Or):
            a, b = self.selectivity(p.left, relation), self.selectivity(p.right, relation)
            return min(a + b - a * b, 1.0)
        if isinstance(p, exp.Not):
            inner = p.this.unnest() if isinstance(p.this, exp.Paren) else p.this
            if isinstance(inner, exp.Is):
                return self._is_null(inner, relation, negate=True)
            return max(1.0 - self.selectivity(inner, relation), 0.0)
        if isinstance(p, exp.Is):
            return self._is_null(p, relation, negate=False)
        if isinstance(p, (exp.EQ, exp.NullSafeEQ)):
            column, value = self._column_and_value(p)
            if column is not None:
                return _equality(relation.column(f"{column.table}.{column.name}"), value)
            return DEFAULT_EQUALITY_SELECTIVITY
        if isinstance(p, exp.NEQ):
            column, value = self._column_and_value(p)
            if column is not None:
                c = relation.column(f"{column.table}.{column.name}")
                return max(_non_null(c) - _equality(c, value), 0.0)
            return 1.0 - DEFAULT_EQUALITY_SELECTIVITY
        if type(p) in _RANGE_OPS:
            op = _RANGE_OPS[type(p)]
            column, value = self._column_and_value(p)
            if column is None:
                return DEFAULT_RANGE_SELECTIVITY
            if not isinstance(p.this, exp.Column):
                op = _FLIP[op]
            return _range(relation.column(f"{column.table}.{column.name}"), op, value)
        if isinstance(p, exp.Between):
            if isinstance(p.this, exp.Column):
                ok_lo, lo = literal_value(p.args["low"])
                ok_hi, hi = literal_value(p.args["high"])
                c = relation.column(f"{p.this.table}.{p.this.name}")
                if ok_lo and ok_hi:
                    below_hi, below_lo = _fraction_below(c, hi), _fraction_below(c, lo)
                    if below_hi is not None and below_lo is not None:
                        eq = _equality(c, hi) if not c.ndv.is_absent else 0.0
                        return max(min(below_hi - below_lo + eq, 1.0), 0.0) * _non_null(c)
            return DEFAULT_BETWEEN_SELECTIVITY
        if isinstance(p, exp.In):
            if isinstance(p.this, exp.Column) and p.expressions and not p.args.get("query"):
                c = relation.column(f"{p.this.table}.{p.this.name}")
                total = 0.0
                for item in p.expressions:
                    ok, value = literal_value(item)
                    total += _equality(c, value) if ok else DEFAULT_EQUALITY_SELECTIVITY
                return min(total, 1.0 if not c.ndv.is_absent else DEFAULT_IN_MAX_SELECTIVITY)
            return DEFAULT_SELECTIVITY
        if isinstance(p, (exp.Like, exp.ILike)):
            return DEFAULT_LIKE_SELECTIVITY
        if isinstance(p, exp.Boolean):
            return 1.0 if p.this else 0.0
        return DEFAULT_SELECTIVITY

    def _is_null(self, p: exp.Is, relation: RelationEstimate, negate: bool) -> float:
        if isinstance(p.this, exp.Column) and isinstance(p.expression, exp.Null):
            fraction = relation.column(f"{p.this.table}.{p.this.name}").null_fraction
            share = fraction.value if not fraction.is_absent else DEFAULT_IS_NULL_SELECTIVITY
            return 1.0 - share if negate else share
        return DEFAULT_SELECTIVITY

    @staticmethod
    def _column_and_value(p: exp.Binary) -> tuple[exp.Column | None, Any]:
        for column, other in ((p.this, p.expression), (p.expression, p.this)):
            if isinstance(column, exp.Column):
                ok, value = literal_value(other)
                if ok:
                    return column, value
        return None, None


def _max(a: Estimate, b: Estimate) -> Estimate:
    if a.is_absent or b.is_absent:
        return Estimate.absent()
    return a if a.value >= b.value else Estimate(b.value, min(a.precision, b.precision))


def _range_bound(predicate: exp.Expression) -> tuple[str, str, Any] | None:
    """(`alias.column`, "lower"/"upper", value) for `column <op> literal` range predicates."""
    p = predicate.unnest() if isinstance(predicate, exp.Paren) else predicate
    if type(p) not in _RANGE_OPS:
        return None
    op = _RANGE_OPS[type(p)]
    if isinstance(p.this, exp.Column):
        column, (ok, value) = p.this, literal_value(p.expression)
    elif isinstance(p.expression, exp.Column):
        column, (ok, value) = p.expression, literal_value(p.this)
        op = _FLIP[op]
    else:
        return None
    if not ok:
        return None
    return f"{column.table}.{column.name}".lower(), ("lower" if op in (">", ">=") else "upper"), value


def _prefixed(relation: RelationEstimate, alias: str) -> RelationEstimate:
    return RelationEstimate(relation.rows, {f"{alias}.{k}".lower(): c for k, c in relation.columns.items()})
