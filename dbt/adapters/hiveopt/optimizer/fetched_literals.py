"""Fetched key values as literals of the key's type (partition pruning): which key types can be
written back so that they compare exactly as the join does, a fetched value as such a literal only
when its Python type is the key's own (never coerced), and how much of a key's min..max a fetched
range covers.

>>> literal_kind("decimal(10,2)"), literal_kind("double"), literal_kind("timestamp")
('decimal', None, None)
>>> fetched_literal(7, "integral", "bigint").sql(), fetched_literal("7", "integral", "bigint")
('7', None)
>>> sorted([2, "b", 1, "a"], key=sort_key)
[1, 2, 'a', 'b']
>>> range_fraction(10, 20, 0, 100), range_fraction("2024-01-01", "2024-01-11", "2024-01-01", "2024-01-21")
(0.1, 0.5)
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.literals import base_type, literal_for

_INTEGRAL = ("tinyint", "smallint", "int", "integer", "bigint", "byte", "short", "long")
# Key types whose values we can write back as literals that compare exactly as the join does.
# Floating point is left out (NaN joins NaN in Spark; no literal for it); timestamps too (the
# session time zone decides how a fetched value reads back).
LITERAL_KINDS = {
    **{t: "integral" for t in _INTEGRAL},
    "decimal": "decimal",
    "string": "string",
    "varchar": "string",
    "char": "string",
    "date": "date",
}


def literal_kind(data_type: str | None) -> str | None:
    """The kind of literal a key of this type is written as ('integral', 'decimal', 'string',
    'date'), or None: its values are not written back."""
    return LITERAL_KINDS.get(base_type(data_type))


def fetched_literal(value: Any, kind: str, data_type: str) -> exp.Expression | None:
    """An AST literal of the key's type (literals.literal_for), only for a fetched value whose
    Python type is the key's own: a value of another type is never coerced into the list."""
    if value is None or isinstance(value, bool):
        return None
    fits = {
        "integral": isinstance(value, int),
        "decimal": isinstance(value, int) or (isinstance(value, decimal.Decimal) and value.is_finite()),
        "string": isinstance(value, str),
        "date": isinstance(value, datetime.date) and not isinstance(value, datetime.datetime),
    }
    return literal_for(value, data_type) if fits.get(kind) else None


def sort_key(value: Any):
    """Orders fetched values of mixed Python types (by type name, then value)."""
    return (type(value).__name__, value)


def _ordinal(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float, decimal.Decimal)):
        return float(value)
    if isinstance(value, datetime.date):
        return float(value.toordinal())
    if isinstance(value, str):
        try:
            return float(datetime.date.fromisoformat(value[:10]).toordinal())
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return None
    return None


def range_fraction(low: Any, high: Any, col_min: Any, col_max: Any) -> float | None:
    """The share of the key's min..max that low..high covers (0..1), None when unknown."""
    points = [_ordinal(v) for v in (low, high, col_min, col_max)]
    if any(p is None for p in points):
        return None
    lo, hi, cmin, cmax = points
    if cmax <= cmin:
        return None
    return max(0.0, min(1.0, (hi - lo) / (cmax - cmin)))
