"""Values into SQL as AST literals of the column's type, never as glued text: a value with a quote
or a backslash stays one value.

>>> from sqlglot import exp
>>> from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
>>> literal_for("it's \\\\ odd", "string").sql(DIALECT)
"'it\\\\'s \\\\\\\\ odd'"
>>> literal_for(7, "bigint").sql(DIALECT), literal_for("2024-01-31", "date").sql(DIALECT)
('7', "CAST('2024-01-31' AS DATE)")
>>> literal_for("x", "map<string,int>") is None
True
"""

from __future__ import annotations

import datetime as _dt
import decimal
from typing import Any, Optional

from sqlglot import exp

_INTEGERS = ("tinyint", "smallint", "int", "integer", "bigint", "long", "short", "byte")
_FRACTIONS = ("float", "double", "real", "decimal", "numeric")
_TEXT = ("string", "varchar", "char")
_TEMPORAL = {"date": "DATE", "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP_NTZ"}


def base_type(data_type: Optional[str]) -> str:
    return (data_type or "").split("(")[0].split("<")[0].strip().lower()


def literal_for(value: Any, data_type: Optional[str]) -> Optional[exp.Expression]:
    """The literal of `value` for a column of `data_type`; None when no literal is safe."""
    base = base_type(data_type)
    if value is None:
        return exp.Null()
    if base == "boolean" and isinstance(value, bool):
        return exp.Boolean(this=value)
    if base in _INTEGERS and isinstance(value, int) and not isinstance(value, bool):
        return exp.Literal.number(str(value))
    if base in _FRACTIONS and isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        return exp.cast(exp.Literal.string(str(value)), data_type or base)  # no float formatting surprises
    if base in _TEXT:
        return exp.Literal.string(str(value))
    if base in _TEMPORAL and isinstance(value, (str, _dt.date, _dt.datetime)):
        text = value.isoformat(sep=" ") if isinstance(value, _dt.datetime) else str(value if isinstance(value, str) else value.isoformat())
        return exp.cast(exp.Literal.string(text), _TEMPORAL[base])
    return None
