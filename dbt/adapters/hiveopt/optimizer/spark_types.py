"""Spark's result types for the few expressions a rule must type itself: sums and averages of
integral and decimal arithmetic. A rule that splits SUM(x) into a sum of partial sums changes its
type for decimals (Spark's SUM of decimal(p, s) is decimal(p + 10, s), capped at 38 digits), so
it casts the outer sum back; AVG(x) of a decimal is Spark's sum divided by its count as
decimal(20, 0), cast to decimal(p + 4, s + 4), which a rule rebuilds from partial sums and counts.

The rules are Spark's DecimalPrecision with `spark.sql.decimalOperations.allowPrecisionLoss` on
(its default): an integral literal takes the fewest digits it needs, an integral column its
type's (int: 10), `+`/`-` keep the larger scale and one more integer digit, `*` adds precisions
(plus one) and scales, and a result past 38 digits keeps its integer digits and gives up scale,
down to 6. Anything else (division, functions, doubles) is "unknown": the caller then declines.

>>> import sqlglot
>>> types = {"price": "decimal(15,2)", "discount": "decimal(15,2)", "qty": "int"}
>>> typed = lambda sql: expression_type(sqlglot.parse_one(sql, read="spark"), lambda c: types.get(c.name))
>>> typed("price * (1 - discount)"), sum_type(typed("price * (1 - discount)")), sum_type(typed("price"))
('decimal(32,4)', 'decimal(38,4)', 'decimal(25,2)')
>>> sum_type(typed("qty * 2")), typed("price / qty"), avg_type(typed("price")), avg_type(typed("qty"))
('bigint', None, 'decimal(19,6)', None)
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

MAX_PRECISION = 38
MINIMUM_ADJUSTED_SCALE = 6
SUM_EXTRA_DIGITS = 10
INTEGRAL_DIGITS = {
    "tinyint": 3,
    "byte": 3,
    "smallint": 5,
    "short": 5,
    "int": 10,
    "integer": 10,
    "bigint": 20,
    "long": 20,
}
INTEGRAL = "bigint"  # every integral expression sums to bigint, whatever its own width

_DECIMAL = re.compile(r"^\s*(?:decimal|numeric|dec)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$", re.IGNORECASE)


def decimal(precision: int, scale: int) -> str:
    return f"decimal({precision},{scale})"


def parse_decimal(data_type: str | None) -> tuple[int, int] | None:
    """(precision, scale) of a decimal type string; Spark's bare DECIMAL is decimal(10,0)."""
    match = _DECIMAL.match(data_type or "")
    if not match:
        return None
    return int(match.group(1) or 10), int(match.group(2) or 0)


def _adjusted(precision: int, scale: int) -> tuple[int, int]:
    if precision <= MAX_PRECISION:
        return precision, scale
    integer_digits = precision - scale
    return MAX_PRECISION, max(MAX_PRECISION - integer_digits, min(scale, MINIMUM_ADJUSTED_SCALE))


# A type while typing an expression: ("integral", digits it takes as a decimal) or ("decimal", p, s).
_Typed = tuple


def _typed(node: exp.Expression, column_type: Callable[[exp.Column], str | None]) -> _Typed | None:
    if isinstance(node, (exp.Paren, exp.Neg)):
        return _typed(node.this, column_type)
    if isinstance(node, exp.Column):
        data_type = (column_type(node) or "").strip().lower()
        if data_type in INTEGRAL_DIGITS:
            return "integral", INTEGRAL_DIGITS[data_type]
        found = parse_decimal(data_type)
        return ("decimal", *found) if found else None
    if isinstance(node, exp.Literal) and not node.is_string:
        text = node.this.lstrip("-")
        if node.is_int:
            # Next to a decimal, Spark gives an integral literal only the digits it has.
            return ("integral", max(1, len(text.lstrip("0")))) if len(text) <= 18 else None
        if re.fullmatch(r"\d*\.\d+|\d+\.\d*", text):
            whole, _, fraction = text.partition(".")
            return "decimal", max(len(whole.lstrip("0")) + len(fraction), len(fraction), 1), len(fraction)
        return None
    if isinstance(node, exp.Cast):
        target = node.to.sql(dialect="spark").lower()
        if target in INTEGRAL_DIGITS:
            return "integral", INTEGRAL_DIGITS[target]
        found = parse_decimal(target)
        return ("decimal", *found) if found else None
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        left, right = _typed(node.this, column_type), _typed(node.expression, column_type)
        if left is None or right is None:
            return None
        if left[0] == "integral" and right[0] == "integral":
            # int op int is an int, anything with a bigint a bigint (a literal alone: an int).
            return "integral", max(INTEGRAL_DIGITS["int"], left[1], right[1])
        (p1, s1), (p2, s2) = [(t[1], 0) if t[0] == "integral" else (t[1], t[2]) for t in (left, right)]
        if isinstance(node, exp.Mul):
            return ("decimal", *_adjusted(p1 + p2 + 1, s1 + s2))
        scale = max(s1, s2)
        return ("decimal", *_adjusted(max(p1 - s1, p2 - s2) + scale + 1, scale))
    return None


def expression_type(node: exp.Expression, column_type: Callable[[exp.Column], str | None]) -> str | None:
    """`bigint` for integral expressions, `decimal(p,s)` for decimal ones, None when unknown."""
    typed = _typed(node, column_type)
    if typed is None:
        return None
    return INTEGRAL if typed[0] == "integral" else decimal(typed[1], typed[2])


def sum_type(argument_type: str | None) -> str | None:
    """The type of SUM over values of `argument_type` (None: not integral or decimal)."""
    if argument_type == INTEGRAL:
        return INTEGRAL
    found = parse_decimal(argument_type)
    if found is None:
        return None
    precision, scale = found
    return decimal(min(MAX_PRECISION, precision + SUM_EXTRA_DIGITS), scale)


AVG_EXTRA_DIGITS = 4
COUNT_AS_DECIMAL = "decimal(20,0)"  # Spark's Average divides by its count cast to DecimalType.LongDecimal


def avg_type(argument_type: str | None) -> str | None:
    """The type of AVG over decimal values (None otherwise: an integral or double AVG sums in
    double, whose value depends on the order of the additions)."""
    found = parse_decimal(argument_type)
    if found is None:
        return None
    precision, scale = found
    return decimal(min(MAX_PRECISION, precision + AVG_EXTRA_DIGITS), min(MAX_PRECISION, scale + AVG_EXTRA_DIGITS))
