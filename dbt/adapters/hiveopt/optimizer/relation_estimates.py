"""What the estimator says of a relation: its rows and, per column, NDV, nulls, range, heavy
hitters, histogram and width (bytes as Spark holds a row, for broadcast and shuffle sizes).

>>> from dbt.adapters.hiveopt.optimizer.statistics import Estimate
>>> relation = RelationEstimate(Estimate.exact(1000), {"k": ColumnEstimate(width=column_width("bigint"))})
>>> relation.bytes().value  # 1000 rows of an 8-byte column and the row overhead
16000
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from dbt.adapters.hiveopt.optimizer.statistics import ColumnStats, Estimate

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
            # At most every row: statistics gathered at different times (or a sample's scaled-up
            # count) can say more NULLs than rows, and a fraction past 1 made rows and costs
            # negative (the differential fuzzer's random statistics, seed 7 case 991).
            null_fraction = Estimate(
                min(stats.null_count.value / rows.value, 1.0) if rows.value else 0.0,
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


def cap_ndv(column: ColumnEstimate, rows: Estimate) -> ColumnEstimate:
    """The column with at most `rows` distinct values; the column itself where that changes
    nothing (each join step caps every column of both sides: TPC-DS's wide tables made the
    copies 8% of the optimizer's time)."""
    ndv = column.ndv.capped(rows)
    return column if ndv is column.ndv else replace(column, ndv=ndv)
