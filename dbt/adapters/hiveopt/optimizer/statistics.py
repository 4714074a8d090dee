"""Statistics as the optimizer sees them: every number carries its precision.

A number is EXACT (counted), ESTIMATED (sketched or derived) or ABSENT (unknown).
ABSENT is never read as 0 or as small: arithmetic with an absent operand is absent.

>>> rows = Estimate.exact(1000)
>>> (rows * 0.5).value, (rows * 0.5).precision.name
(500.0, 'ESTIMATED')
>>> (rows * Estimate.absent()).is_absent
True
>>> TableStats.from_dict({"row_count": 10, "columns": {"a": {"ndv": 3}}}).columns["a"].ndv.value
3.0
>>> payload = {"row_count": 10, "columns": {"k": {"heavy_hitters": [[None, 9], ["hot", 8]]}}}
>>> TableStats.from_dict(payload).column("k").heavy_hitters
[('hot', 8.0)]
>>> try:
...     TableStats.from_dict({"row_count": "many"})
... except StatisticsError as error:
...     print(error)
row_count: 'many' is not a number
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class Precision(enum.IntEnum):
    """Ordered from worst to best, so min() of operands gives a result's precision."""

    ABSENT = 0
    ESTIMATED = 1
    EXACT = 2


@dataclass(frozen=True)
class Estimate:
    value: float | None
    precision: Precision

    @staticmethod
    def exact(value: float) -> Estimate:
        return Estimate(value, Precision.EXACT)

    @staticmethod
    def estimated(value: float) -> Estimate:
        return Estimate(value, Precision.ESTIMATED)

    @staticmethod
    def absent() -> Estimate:
        return Estimate(None, Precision.ABSENT)

    @staticmethod
    def of(value: Any, precision: Precision) -> Estimate:
        if value is None or precision == Precision.ABSENT:
            return Estimate.absent()
        return Estimate(float(value), precision)

    @property
    def is_exact(self) -> bool:
        return self.precision == Precision.EXACT and self.value is not None

    @property
    def is_absent(self) -> bool:
        return self.precision == Precision.ABSENT or self.value is None

    def _combine(self, other: Any, op) -> Estimate:
        if isinstance(other, Estimate):
            if self.is_absent or other.is_absent:
                return Estimate.absent()
            # A derived number is at best an estimate unless both operands are exact.
            precision = min(self.precision, other.precision)
            return Estimate(op(self.value, other.value), precision)
        if self.is_absent:
            return Estimate.absent()
        # Multiplying by a (selectivity) constant turns a count into an estimate.
        return Estimate(op(self.value, float(other)), min(self.precision, Precision.ESTIMATED))

    def __mul__(self, other: Any) -> Estimate:
        return self._combine(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __add__(self, other: Any) -> Estimate:
        return self._combine(other, lambda a, b: a + b)

    __radd__ = __add__

    def __truediv__(self, other: Any) -> Estimate:
        return self._combine(other, lambda a, b: a / b if b else a)

    def capped(self, upper: Estimate) -> Estimate:
        """min(self, upper) when both are known; keeps self's precision."""
        if self.is_absent:
            return self
        if upper.is_absent or upper.value >= self.value:
            return self
        return Estimate(upper.value, min(self.precision, upper.precision))

    def at_least(self, lower: float) -> Estimate:
        if self.is_absent or self.value >= lower:
            return self
        return Estimate(float(lower), self.precision)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "precision": self.precision.name.lower()}


class StatisticsError(ValueError):
    """A statistics payload that does not have the shape statistics have: the store skips it."""


_SCALARS = (str, int, float)


def _count(raw: Any, what: str) -> float:
    """A stored count or size: a finite number >= 0 (a bool or text is not one)."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise StatisticsError(f"{what}: {raw!r} is not a number")
    value = float(raw)
    if not math.isfinite(value) or value < 0:
        raise StatisticsError(f"{what}: {raw!r} is not a count")
    return value


def _estimate_from(raw: Any, default_precision: Precision, what: str = "a number") -> Estimate:
    """Read a stored number: either a bare value or {"value": v, "precision": p}."""
    if raw is None:
        return Estimate.absent()
    if isinstance(raw, Mapping):
        name = str(raw.get("precision", default_precision.name)).upper()
        if name not in Precision.__members__:
            raise StatisticsError(f"{what}: unknown precision {raw.get('precision')!r}")
        value = raw.get("value")
        return Estimate.of(None if value is None else _count(value, what), Precision[name])
    return Estimate.of(_count(raw, what), default_precision)


def _value(raw: Any, what: str) -> Any:
    """A column value as stored (min, max, a histogram boundary): a scalar or NULL."""
    if raw is not None and (isinstance(raw, bool) or not isinstance(raw, _SCALARS)):
        raise StatisticsError(f"{what}: {raw!r} is not a column value")
    return raw


def _heavy_hitters(raw: Any, what: str) -> list[tuple[Any, float]] | None:
    """[[value, count], ...]; an entry whose value is NULL is left out (NULL keys never match a
    join, and no NULL may reach an IN-list built from these values)."""
    if raw is None:
        return None
    if not isinstance(raw, (list, tuple)):
        raise StatisticsError(f"{what}: not a list")
    out: list[tuple[Any, float]] = []
    for entry in raw:
        if not isinstance(entry, (list, tuple)) or len(entry) != 2:
            raise StatisticsError(f"{what}: {entry!r} is not a [value, count] pair")
        value = _value(entry[0], what)
        count = _count(entry[1], what)
        if value is not None:
            out.append((value, count))
    return out


@dataclass
class ColumnStats:
    """Per-column statistics. min/max/heavy hitters keep the column's values (numbers or strings)."""

    ndv: Estimate = field(default_factory=Estimate.absent)
    null_count: Estimate = field(default_factory=Estimate.absent)
    avg_width: Estimate = field(default_factory=Estimate.absent)
    min: Any = None
    max: Any = None
    data_type: str | None = None
    # [(value, count)], most frequent first; None = not gathered, [] = gathered, no heavy hitter.
    heavy_hitters: list[tuple[Any, float]] | None = None
    # equi-height boundaries (approx_percentile at evenly spaced ranks), None = not gathered.
    histogram: list[Any] | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: str = "column") -> ColumnStats:
        """Raises StatisticsError for a payload that is not statistics."""
        if not isinstance(data, Mapping):
            raise StatisticsError(f"{name}: not a mapping")
        histogram = data.get("histogram")
        if histogram is not None and not isinstance(histogram, (list, tuple)):
            raise StatisticsError(f"{name}.histogram: not a list")
        data_type = data.get("data_type")
        if data_type is not None and not isinstance(data_type, str):
            raise StatisticsError(f"{name}.data_type: {data_type!r} is not a type")
        return cls(
            ndv=_estimate_from(data.get("ndv"), Precision.ESTIMATED, f"{name}.ndv"),
            null_count=_estimate_from(data.get("null_count"), Precision.EXACT, f"{name}.null_count"),
            avg_width=_estimate_from(data.get("avg_width"), Precision.ESTIMATED, f"{name}.avg_width"),
            min=_value(data.get("min"), f"{name}.min"),
            max=_value(data.get("max"), f"{name}.max"),
            data_type=data_type,
            heavy_hitters=_heavy_hitters(data.get("heavy_hitters"), f"{name}.heavy_hitters"),
            histogram=[v for v in (_value(v, f"{name}.histogram") for v in histogram) if v is not None]
            if histogram is not None
            else None,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ndv": self.ndv.to_dict(),
            "null_count": self.null_count.to_dict(),
            "avg_width": self.avg_width.to_dict(),
            "min": self.min,
            "max": self.max,
            "data_type": self.data_type,
        }
        if self.heavy_hitters is not None:
            out["heavy_hitters"] = [[v, c] for v, c in self.heavy_hitters]
        if self.histogram is not None:
            out["histogram"] = list(self.histogram)
        return out


@dataclass
class TableStats:
    row_count: Estimate = field(default_factory=Estimate.absent)
    size_bytes: Estimate = field(default_factory=Estimate.absent)
    columns: dict[str, ColumnStats] = field(default_factory=dict)
    fingerprint: str | None = None
    collected_at: str | None = None
    # Set by the statistics store when the table changed since collection: not to be trusted.
    stale: bool = False
    # Spark's own size of the relation, when it is not its size on disk: a view's (the plan it
    # stands for, spark_sizes.py). What decides whether Spark broadcasts it by itself.
    spark_bytes: Estimate = field(default_factory=Estimate.absent)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TableStats:
        """Raises StatisticsError for a payload that is not statistics (the store skips it)."""
        if not isinstance(data, Mapping):
            raise StatisticsError("not a mapping")
        columns = data.get("columns") or {}
        if not isinstance(columns, Mapping):
            raise StatisticsError("columns: not a mapping")
        return cls(
            row_count=_estimate_from(data.get("row_count"), Precision.EXACT, "row_count"),
            size_bytes=_estimate_from(data.get("size_bytes"), Precision.EXACT, "size_bytes"),
            columns={str(k).lower(): ColumnStats.from_dict(v, str(k)) for k, v in columns.items()},
            fingerprint=data.get("fingerprint"),
            collected_at=data.get("collected_at"),
            stale=bool(data.get("stale", False)),
            spark_bytes=_estimate_from(data.get("spark_bytes"), Precision.ESTIMATED, "spark_bytes"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "row_count": self.row_count.to_dict(),
            "size_bytes": self.size_bytes.to_dict(),
            "columns": {k: v.to_dict() for k, v in self.columns.items()},
            "fingerprint": self.fingerprint,
            "collected_at": self.collected_at,
            "stale": self.stale,
            **({} if self.spark_bytes.is_absent else {"spark_bytes": self.spark_bytes.to_dict()}),
        }

    def column(self, name: str) -> ColumnStats:
        return self.columns.get(name.lower()) or ColumnStats()


class StatsCatalog:
    """Statistics by table name (`db.table`, case-insensitive). Unknown tables are None."""

    def __init__(self, tables: Mapping[str, TableStats] | None = None):
        self._tables: dict[str, TableStats] = {}
        for name, stats in (tables or {}).items():
            self.put(name, stats)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StatsCatalog:
        return cls({name: TableStats.from_dict(t) for name, t in data.items()})

    def put(self, name: str, stats: TableStats) -> None:
        self._tables[name.lower()] = stats

    def get(self, name: str) -> TableStats | None:
        stats = self._tables.get(name.lower())
        if stats is None or stats.stale:
            return None
        return stats

    def names(self) -> list[str]:
        return sorted(self._tables)

    def to_dict(self) -> dict[str, Any]:
        return {name: stats.to_dict() for name, stats in self._tables.items()}
