"""Comparing two query results as multisets of rows.

Floats compare to about 9 significant digits (another order of additions changes the last bits),
-0.0 equals 0.0 and NaN equals NaN; decimals, integers, strings and dates compare exactly.

>>> import decimal
>>> diff = compare_rows([(1.0000000001, "a"), (None, "b")], [(None, "b"), (1.0, "a")])
>>> diff.equal
True
>>> diff = compare_rows([(decimal.Decimal("1.50"),)], [(decimal.Decimal("1.51"),)])
>>> diff.equal, diff.only_original, diff.only_optimized
(False, [(Decimal('1.50'),)], [(Decimal('1.51'),)])
>>> compare_rows([(float("nan"), -0.0)], [(float("nan"), 0.0)]).equal
True
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

SIGNIFICANT_DIGITS = 9
RELATIVE_TOLERANCE = 1e-9


def _float_key(value: float) -> Any:
    if math.isnan(value):
        return ("nan",)
    if math.isinf(value):
        return ("inf", value > 0)
    if value == 0:
        return 0.0
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def normalize(value: Any) -> Any:
    """A hashable, comparable form of one value of a result row."""
    if isinstance(value, float):
        return _float_key(value)
    if isinstance(value, (list, tuple)):
        return tuple(normalize(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((normalize(k), normalize(v)) for k, v in value.items()))
    if hasattr(value, "asDict"):
        return tuple(normalize(v) for v in value)
    return value


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return normalize(a) == normalize(b)


@dataclass
class RowDiff:
    only_original: list[tuple] = field(default_factory=list)
    only_optimized: list[tuple] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.only_original and not self.only_optimized


def compare_rows(original: Sequence[Sequence[Any]], optimized: Sequence[Sequence[Any]]) -> RowDiff:
    """The rows each side has that the other lacks (as multisets). Rows whose floats fall on two
    sides of a rounding boundary are paired again with a relative tolerance."""
    a = Counter(tuple(normalize(v) for v in row) for row in original)
    b = Counter(tuple(normalize(v) for v in row) for row in optimized)
    if a == b:
        return RowDiff()
    raw_a = {tuple(normalize(v) for v in row): tuple(row) for row in original}
    raw_b = {tuple(normalize(v) for v in row): tuple(row) for row in optimized}
    left = [raw_a[k] for k, n in (a - b).items() for _ in range(n)]
    right = [raw_b[k] for k, n in (b - a).items() for _ in range(n)]
    unmatched = []
    for row in left:
        match = next((i for i, other in enumerate(right) if _close(row, other)), None)
        if match is None:
            unmatched.append(row)
        else:
            right.pop(match)
    return RowDiff(unmatched, right)
