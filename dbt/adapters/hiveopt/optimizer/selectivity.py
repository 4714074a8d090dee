"""Selectivity of predicates over a relation estimate (System R / Selinger, textbook formulas):
equality selects 1/NDV (or a heavy hitter's own frequency), ranges read min/max or the
equi-height histogram, IN-lists add equalities, NULL tests read null counts, AND multiplies
(bounds on one column, BETWEENs included, form one interval), OR adds minus the overlap. Every
default is a named constant here.

>>> import sqlglot
>>> from dbt.adapters.hiveopt.optimizer.statistics import Estimate
>>> column = ColumnEstimate(ndv=Estimate.exact(100), min=1, max=100)
>>> relation = RelationEstimate(Estimate.exact(1000), {"t.k": column})
>>> selectivity(sqlglot.parse_one("t.k = 5"), relation), round(selectivity(sqlglot.parse_one("t.k <= 50"), relation), 3)
(0.01, 0.505)
"""

from __future__ import annotations

import datetime as _dt
import functools
from dataclasses import replace
from typing import Any

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.relation_estimates import ColumnEstimate, RelationEstimate
from dbt.adapters.hiveopt.optimizer.statistics import Estimate
from dbt.adapters.hiveopt.optimizer.syntax import conjuncts

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
        return _text_as_number(value)
    return None


# The ISO forms of a date or timestamp written as text (statistics keep them so: min, max, bounds).
ISO_DATE_FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f")


@functools.lru_cache(maxsize=4096)
def _text_as_number(value: str) -> float | None:
    """A date, timestamp or number written as text (a histogram's bounds are compared with each
    filter's values: strptime ran about 1,200 times per optimization of a six-way join)."""
    text = value.strip()
    for fmt in ISO_DATE_FORMATS:
        try:
            return _as_number(_dt.datetime.strptime(text, fmt))
        except ValueError:
            pass
    try:
        return float(text)
    except ValueError:
        return None


# Constant arithmetic an analyst writes (`1999 + 1`), folded as Spark folds it before planning.
_ARITHMETIC = {
    exp.Add: lambda a, b: a + b,
    exp.Sub: lambda a, b: a - b,
    exp.Mul: lambda a, b: a * b,
    exp.Div: lambda a, b: a / b if b else None,  # Spark's `/` is a double; NULL for 0
}


def literal_value(node: exp.Expression) -> tuple[bool, Any]:
    """(is a constant, its Python value) for literals, negated numbers, typed date literals and
    arithmetic of numbers. For estimates only: the SQL keeps what the analyst wrote.

    >>> import sqlglot
    >>> literal_value(sqlglot.parse_one("1999 + 2")), literal_value(sqlglot.parse_one("7 / 2"))
    ((True, 2001), (True, 3.5))
    """
    arithmetic = _ARITHMETIC.get(type(node))
    if arithmetic is not None:
        (ok_a, a), (ok_b, b) = literal_value(node.this), literal_value(node.expression)
        numbers = ok_a and ok_b and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        value = arithmetic(a, b) if numbers else None
        return value is not None, value
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


def _range_bounds(predicate: exp.Expression) -> list[tuple[str, str, Any, bool]] | None:
    """The bounds a range predicate puts on one column, as (`alias.column`, "lower" or "upper",
    value, inclusive): one for `column <op> literal` (either way round), two for `column BETWEEN
    low AND high`; None for anything else."""
    p = predicate.unnest() if isinstance(predicate, exp.Paren) else predicate
    if isinstance(p, exp.Between) and isinstance(p.this, exp.Column) and not p.args.get("symmetric"):
        (ok_lo, low), (ok_hi, high) = literal_value(p.args["low"]), literal_value(p.args["high"])
        if not (ok_lo and ok_hi):
            return None
        key = f"{p.this.table}.{p.this.name}".lower()
        return [(key, "lower", low, True), (key, "upper", high, True)]
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
    key = f"{column.table}.{column.name}".lower()
    return [(key, "lower" if op in (">", ">=") else "upper", value, op in ("<=", ">="))]


def conjunction_selectivity(predicates: list[exp.Expression], relation: RelationEstimate) -> float:
    """AND of predicates. The range bounds on one column, BETWEENs' included, form one interval
    (`a > x AND a < y` is not two independent halves, nor `a BETWEEN 64 AND 74 AND a BETWEEN 65
    AND 79` two independent tenths: TPC-DS q64); everything else multiplies."""
    share = 1.0
    bounds: dict[str, dict[str, list[tuple[Any, bool, exp.Expression]]]] = {}
    for predicate in predicates:
        found = _range_bounds(predicate)
        if found is None:
            share *= selectivity(predicate, relation)
            continue
        for key, side, value, inclusive in found:
            bounds.setdefault(key, {"lower": [], "upper": []})[side].append((value, inclusive, predicate))
    for key, sides in bounds.items():
        lows = [(n, v) for v, _, _ in sides["lower"] if (n := _as_number(v)) is not None]
        # The tightest upper bound; of equal ones the exclusive (`< x` under `<= x`).
        highs = [(n, inclusive, v) for v, inclusive, _ in sides["upper"] if (n := _as_number(v)) is not None]
        interval = None
        if lows and highs:
            _, low = max(lows, key=lambda b: b[0])
            _, inclusive, high = min(highs, key=lambda b: (b[0], b[1]))
            interval = _interval(relation.column(key), low, high, inclusive)
        if interval is not None:
            share *= interval
        else:
            alone = {id(p): p for _, _, p in sides["lower"] + sides["upper"]}  # a BETWEEN once
            for predicate in alone.values():
                share *= selectivity(predicate, relation)
    return share


def _interval(column: ColumnEstimate, low: Any, high: Any, high_inclusive: bool) -> float | None:
    """Share of the rows with low <= column < high (<= high: plus that value's own share), or None
    where the column's range is unknown."""
    below_hi, below_lo = _fraction_below(column, high), _fraction_below(column, low)
    if below_hi is None or below_lo is None:
        return None
    equal = _equality(column, high) if high_inclusive and not column.ndv.is_absent else 0.0
    return max(min(below_hi - below_lo + equal, 1.0), 0.0) * _non_null(column)


def selectivity(predicate: exp.Expression, relation: RelationEstimate) -> float:
    p = predicate.unnest() if isinstance(predicate, exp.Paren) else predicate
    if isinstance(p, exp.And):
        return conjunction_selectivity(conjuncts(p), relation)
    if isinstance(p, exp.Or):
        a, b = selectivity(p.left, relation), selectivity(p.right, relation)
        return min(a + b - a * b, 1.0)
    if isinstance(p, exp.Not):
        inner = p.this.unnest() if isinstance(p.this, exp.Paren) else p.this
        if isinstance(inner, exp.Is):
            return _is_null(inner, relation, negate=True)
        return max(1.0 - selectivity(inner, relation), 0.0)
    if isinstance(p, exp.Is):
        return _is_null(p, relation, negate=False)
    if isinstance(p, (exp.EQ, exp.NullSafeEQ)):
        column, value = _column_and_value(p)
        if column is not None:
            return _equality(relation.column(f"{column.table}.{column.name}"), value)
        return DEFAULT_EQUALITY_SELECTIVITY
    if isinstance(p, exp.NEQ):
        column, value = _column_and_value(p)
        if column is not None:
            c = relation.column(f"{column.table}.{column.name}")
            return max(_non_null(c) - _equality(c, value), 0.0)
        return 1.0 - DEFAULT_EQUALITY_SELECTIVITY
    if type(p) in _RANGE_OPS:
        op = _RANGE_OPS[type(p)]
        column, value = _column_and_value(p)
        if column is None:
            return DEFAULT_RANGE_SELECTIVITY
        if not isinstance(p.this, exp.Column):
            op = _FLIP[op]
        return _range(relation.column(f"{column.table}.{column.name}"), op, value)
    if isinstance(p, exp.Between):
        if isinstance(p.this, exp.Column):
            ok_lo, lo = literal_value(p.args["low"])
            ok_hi, hi = literal_value(p.args["high"])
            if ok_lo and ok_hi:
                share = _interval(relation.column(f"{p.this.table}.{p.this.name}"), lo, hi, high_inclusive=True)
                if share is not None:
                    return share
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


def _is_null(p: exp.Is, relation: RelationEstimate, negate: bool) -> float:
    if isinstance(p.this, exp.Column) and isinstance(p.expression, exp.Null):
        fraction = relation.column(f"{p.this.table}.{p.this.name}").null_fraction
        share = fraction.value if not fraction.is_absent else DEFAULT_IS_NULL_SELECTIVITY
        return 1.0 - share if negate else share
    return DEFAULT_SELECTIVITY


def _column_and_value(p: exp.Binary) -> tuple[exp.Column | None, Any]:
    for column, other in ((p.this, p.expression), (p.expression, p.this)):
        if isinstance(column, exp.Column):
            ok, value = literal_value(other)
            if ok:
                return column, value
    return None, None


# --- What a filter leaves of a column ------------------------------------------------------------
def pinned_values(predicates: list[exp.Expression]) -> dict[tuple[str, str], list[Any]]:
    """The columns that conjuncts pin to listed literals (`t.c = 1`, `t.c IN (1, 2)`), as
    (table, column) -> the distinct values the rows that pass can hold.

    >>> import sqlglot
    >>> pinned_values([sqlglot.parse_one("t.k IN (0, 7, 7)"), sqlglot.parse_one("t.v = 'x'")])
    {('t', 'k'): [0, 7], ('t', 'v'): ['x']}
    """
    out: dict[tuple[str, str], list[Any]] = {}
    for predicate in predicates:
        p = predicate.unnest() if isinstance(predicate, exp.Paren) else predicate
        values = None
        if isinstance(p, exp.EQ):
            column, value = _column_and_value(p)
            values = [value] if column is not None else None
        elif isinstance(p, exp.In) and isinstance(p.this, exp.Column) and p.expressions and not p.args.get("query"):
            column, literals = p.this, [literal_value(item) for item in p.expressions]
            values = [value for _, value in literals] if all(ok for ok, _ in literals) else None
        if not values or any(v is None for v in values):
            continue
        distinct: list[Any] = []
        for value in values:
            if not any(_same_value(value, seen) for seen in distinct):
                distinct.append(value)
        key = (column.table, column.name.lower())
        if key in out:  # two pins on one column: the values both allow
            distinct = [v for v in out[key] if any(_same_value(v, w) for w in distinct)] or out[key]
        out[key] = distinct
    return out


def narrowed(column: ColumnEstimate, values: list[Any], kept: float) -> ColumnEstimate:
    """A column after a filter that pins it to `values` and keeps the share `kept` of the rows: at
    most len(values) distinct values and no NULL; its heavy hitters those among the values, as
    shares of the rows kept. (Without this, a join after `f.k IN (hot key)` divided by the key's
    NDV before the filter: a skew split's hot branch was estimated at 184 rows for 891,002.)

    >>> hot = ColumnEstimate(ndv=Estimate.exact(10**6), heavy_hitters=[(0, 0.9), (5, 0.01)])
    >>> after = narrowed(hot, [0], 0.9)
    >>> after.ndv.value, after.heavy_hitters, after.null_fraction.value
    (1.0, [(0, 1.0)], 0.0)
    """
    count = Estimate.exact(float(len(values)))
    ndv = Estimate.estimated(float(len(values))) if column.ndv.is_absent else column.ndv.capped(count)
    hitters = column.heavy_hitters
    if hitters is not None and kept > 0:
        hitters = [(v, min(1.0, s / kept)) for v, s in hitters if any(_same_value(v, w) for w in values)]
    return replace(column, ndv=ndv, null_fraction=Estimate.exact(0.0), heavy_hitters=hitters)


def filtered(relation: RelationEstimate, predicates: list[exp.Expression]) -> RelationEstimate:
    """The relation (columns named `alias.column`) after predicates that read only it: its rows
    times their selectivity, and the columns they pin narrowed (see narrowed).

    >>> import sqlglot
    >>> relation = RelationEstimate(Estimate.exact(1000), {"t.k": ColumnEstimate(ndv=Estimate.exact(100))})
    >>> after = filtered(relation, [sqlglot.parse_one("t.k IN (1, 2)")])
    >>> after.rows.value, after.column("t.k").ndv.value
    (20.0, 2.0)
    """
    if not predicates:
        return relation
    share = conjunction_selectivity(predicates, relation)
    rows = relation.rows * share if share != 1.0 else relation.rows
    pinned = {f"{table}.{column}".lower(): values for (table, column), values in pinned_values(predicates).items()}
    columns = {
        name: narrowed(column, pinned[name], share) if name in pinned else column
        for name, column in relation.columns.items()
    }
    return RelationEstimate(rows, columns)
