"""Values into SQL as AST literals of the column's type, never as glued text: a value with a quote
or a backslash stays one value.

Values from outside the query (configured hot keys, heavy hitters, fetched key values) are first
converted to a value of the column's type (`typed_value`): NULL, and anything that would not
convert to a non-NULL value of that type, is refused, so no list this module builds holds a NULL
(`k IN (NULL, 1)` is NULL for every other key, and `NOT k IN (NULL, 1)` drops every row) and no
cast in it can fail or return NULL (with ANSI mode on, a bad cast fails the query).

>>> from sqlglot import exp
>>> from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
>>> literal_for("it's \\\\ odd", "string").sql(DIALECT)
"'it\\\\'s \\\\\\\\ odd'"
>>> literal_for(7, "bigint").sql(DIALECT), literal_for("2024-01-31", "date").sql(DIALECT)
('7', "CAST('2024-01-31' AS DATE)")
>>> literal_for("x", "map<string,int>") is None, literal_for(None, "int") is None
(True, True)
>>> typed_value("2024/01/05", "date")
(None, "'2024/01/05' is not a date (YYYY-MM-DD)")
>>> typed_value(300, "tinyint")[1], typed_value("12.345", "decimal(10,2)")[1]
('300 is outside tinyint', "'12.345' is not a value of decimal(10,2)")
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import re
from collections.abc import Sequence
from typing import Any

from sqlglot import exp

_INTEGERS = {"tinyint": 8, "byte": 8, "smallint": 16, "short": 16, "int": 32, "integer": 32, "bigint": 64, "long": 64}
_FLOATS = ("float", "double", "real")
_DECIMALS = ("decimal", "numeric", "dec")
_TEXT = ("string", "varchar", "char")
_TEMPORAL = {"date": "DATE", "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP_NTZ"}
# Spark casts more spellings than these, but not all the ones Python parses ('20240105'): a value
# is accepted only in the form both read alike, and written back in canonical form.
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ISO_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?$")
_INTEGER_TEXT = re.compile(r"^[+-]?\d+$")


def base_type(data_type: str | None) -> str:
    return (data_type or "").split("(")[0].split("<")[0].strip().lower()


def _decimal_shape(data_type: str) -> tuple[int, int]:
    """(precision, scale) of `decimal(p,s)`; Spark's bare DECIMAL is decimal(10,0)."""
    found = re.search(r"\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)", data_type)
    if not found:
        return 10, 0
    return int(found.group(1)), int(found.group(2) or 0)


def typed_value(value: Any, data_type: str | None) -> tuple[Any, str | None]:
    """(the value as the column's type holds it, None), or (None, why it is refused).

    Accepted: ints (in range) for integral columns, integral text too; numbers for decimals that
    fit the precision and scale exactly; finite numbers for doubles; text (or an int) for strings;
    booleans; dates and timestamps as such or in ISO form (written back canonically).

    >>> typed_value("42", "int"), typed_value(1.5, "decimal(3,1)"), typed_value("2024/01/05", "date")
    ((42, None), (Decimal('1.5'), None), (None, "'2024/01/05' is not a date (YYYY-MM-DD)"))
    """
    base = base_type(data_type)
    shown = repr(value)
    if value is None:
        return None, "NULL is never a key value"
    if isinstance(value, bool):
        return (value, None) if base == "boolean" else (None, f"{shown} is a boolean, not a {base} value")
    for types, convert in _CONVERTERS:
        if base in types:
            return convert(value, base, data_type or "", shown)
    if base == "boolean":
        return None, f"{shown} is not a boolean"
    return None, f"no literal of type {data_type or 'unknown'}"


def _integer(value: Any, base: str, data_type: str, shown: str) -> tuple[Any, str | None]:
    number: Any = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, decimal.Decimal) and value.is_finite() and value == value.to_integral_value():
        number = int(value)
    elif isinstance(value, str) and _INTEGER_TEXT.match(value.strip()):
        number = int(value.strip())
    if number is None:
        return None, f"{shown} is not an integer"
    bits = _INTEGERS[base]
    if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
        return None, f"{number} is outside {base}"
    return number, None


def _decimal(value: Any, base: str, data_type: str, shown: str) -> tuple[Any, str | None]:
    try:
        number = decimal.Decimal(value if isinstance(value, (str, int, decimal.Decimal)) else repr(value))
    except (decimal.InvalidOperation, TypeError, ValueError):
        return None, f"{shown} is not a number"
    precision, scale = _decimal_shape(data_type)
    if not number.is_finite():
        return None, f"{shown} is not a finite number"
    try:
        quantized = number.quantize(decimal.Decimal(1).scaleb(-scale), context=decimal.Context(prec=80))
    except decimal.InvalidOperation:
        quantized = None
    integer_digits = len(str(abs(int(quantized)))) if quantized is not None and int(quantized) else 0
    if quantized is None or quantized != number or integer_digits > precision - scale:
        return None, f"{shown} is not a value of {data_type}"
    return quantized, None


def _float(value: Any, base: str, data_type: str, shown: str) -> tuple[Any, str | None]:
    try:
        number = float(value) if isinstance(value, (int, float, decimal.Decimal, str)) else None
    except ValueError:
        number = None
    if number is None or not math.isfinite(number):
        return None, f"{shown} is not a finite number"
    return number, None


def _text(value: Any, base: str, data_type: str, shown: str) -> tuple[Any, str | None]:
    if isinstance(value, str):
        return value, None
    if isinstance(value, int):
        return str(value), None
    return None, f"{shown} is not text"


def _date(value: Any, base: str, data_type: str, shown: str) -> tuple[Any, str | None]:
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return value, None
    if isinstance(value, str) and _ISO_DATE.match(value.strip()):
        try:
            return _dt.date.fromisoformat(value.strip()), None
        except ValueError:
            pass
    return None, f"{shown} is not a date (YYYY-MM-DD)"


def _timestamp(value: Any, base: str, data_type: str, shown: str) -> tuple[Any, str | None]:
    if isinstance(value, _dt.datetime):
        return (value, None) if value.tzinfo is None else (None, f"{shown} carries a time zone")
    if isinstance(value, _dt.date):
        return _dt.datetime.combine(value, _dt.time()), None
    if isinstance(value, str) and _ISO_TIMESTAMP.match(value.strip()):
        try:
            return _dt.datetime.fromisoformat(value.strip()), None
        except ValueError:
            pass
    return None, f"{shown} is not a timestamp (YYYY-MM-DD HH:MM:SS)"


# The converter of each family of types, in the order typed_value tries them.
_CONVERTERS = (
    (_INTEGERS, _integer),
    (_DECIMALS, _decimal),
    (_FLOATS, _float),
    (_TEXT, _text),
    (("date",), _date),
    (("timestamp", "timestamp_ntz"), _timestamp),
)


def literal_for(value: Any, data_type: str | None) -> exp.Expression | None:
    """The literal of `value` for a column of `data_type`; None when the value is NULL or does not
    convert to a value of that type (see typed_value)."""
    typed, problem = typed_value(value, data_type)
    if problem is not None:
        return None
    base = base_type(data_type)
    if base == "boolean":
        return exp.Boolean(this=typed)
    if base in _INTEGERS:
        return exp.Literal.number(str(typed))
    if base in _DECIMALS:
        return exp.cast(exp.Literal.string(str(typed)), data_type or base)
    if base in _FLOATS:
        return exp.cast(exp.Literal.string(repr(typed)), data_type or base)  # repr round-trips
    if base in _TEXT:
        return exp.Literal.string(typed)
    text = typed.isoformat(sep=" ") if isinstance(typed, _dt.datetime) else typed.isoformat()
    return exp.cast(exp.Literal.string(text), _TEMPORAL[base])


def key_literals(values: Sequence[Any], data_type: str | None) -> tuple[list[exp.Expression], list[str]]:
    """Literals for the values that convert (each once), and why each other value was dropped.

    >>> literals, dropped = key_literals([None, "hot", "hot", 5], "string")
    >>> [l.sql("spark") for l in literals], dropped
    (["'hot'", "'5'"], ['NULL is never a key value'])
    """
    literals: list[exp.Expression] = []
    seen = set()
    dropped: list[str] = []
    for value in values:
        typed, problem = typed_value(value, data_type)
        if problem is not None:
            dropped.append(problem)
            continue
        if (type(typed), typed) in seen:
            continue
        seen.add((type(typed), typed))
        literals.append(literal_for(typed, data_type))
    return literals, dropped
