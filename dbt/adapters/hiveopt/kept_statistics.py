"""Statistics kept across a small change of a table's size (`stats.keep_within_size`).

A daily load of a source appends a few percent of rows, or writes the same files again; its
creation time or size changes, so the fingerprint does, and hiveopt would gather the whole table
again (TPC-H SF 1, a build after the sources were registered again: 15.5 s of statistics on a
48 s build). With `keep_within_size: F` (default 1.1; 1 switches it off), statistics gathered when
the table was between size/F and size*F on disk are kept for decisions instead, scaled to the size
it has now as a sample is scaled to its table (statistics_gathering.scale_sample): row count, null
counts and heavy hitters by the ratio of sizes, NDVs by the uniform-frequency estimator (a unique
key grows with the table, a status column does not), all marked estimated. Appended rows often
carry keys past the old maximum (today's date, the next order key): min and max, and a histogram's
end bounds, are moved out by the share of the size that changed, so that a filter on the new
values is not estimated at 0 rows. The drift is measured from the size at collection, never from
the day before, so it cannot add up past F; past F the table is gathered again. Seeds are left
out: their statistics are counted from their file (table_info.describes).

Statistics steer decisions, never results: kept ones can only make a decision less apt.

>>> from dbt.adapters.hiveopt.optimizer.statistics import ColumnStats, Estimate, TableStats
>>> old = TableStats(row_count=Estimate.exact(1000), size_bytes=Estimate.exact(10_000), columns={
...     "id": ColumnStats(ndv=Estimate.estimated(1000), null_count=Estimate.exact(0), min=1, max=1000),
...     "day": ColumnStats(ndv=Estimate.estimated(100), null_count=Estimate.exact(0),
...                        min="2024-01-01", max="2024-04-09", histogram=["2024-01-01", "2024-02-20", "2024-04-09"])})
>>> kept = kept_statistics(old, size_now=10_500, factor=1.1)
>>> kept.row_count.value, kept.row_count.precision.name, round(kept.column("id").ndv.value)
(1050.0, 'ESTIMATED', 1050)
>>> kept.column("id").min, kept.column("id").max, kept.column("day").max, kept.column("day").histogram[-1]
(-49, 1050, '2024-04-14', '2024-04-14')
>>> kept_statistics(old, size_now=12_000, factor=1.1) is None  # past the factor: gathered again
True
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

from dbt.adapters.hiveopt.optimizer.selectivity import ISO_DATE_FORMATS
from dbt.adapters.hiveopt.optimizer.statistics import Estimate, TableStats
from dbt.adapters.hiveopt.statistics_gathering import scale_sample

# A daily load of a few percent keeps the statistics; a table rebuilt with a tenth more or less
# data, or past it, is gathered again (feedback's memory holds its decisions up to 2x).
DEFAULT_KEEP_WITHIN_SIZE = 1.1


def kept_statistics(stats: TableStats, size_now: int | None, factor: float) -> TableStats | None:
    """The statistics `stats` (gathered at `stats.size_bytes` bytes) scaled to a table of
    `size_now` bytes, or None where they are not to be kept: no factor (<= 1), a size unknown
    then or now, or sizes further apart than `factor`. A new object: `stats` is left as stored."""
    size_then = stats.size_bytes.value
    if factor <= 1 or not size_then or not size_now or stats.row_count.is_absent:
        return None
    ratio = size_now / size_then
    if not 1 / factor <= ratio <= factor:
        return None
    kept = TableStats.from_dict(stats.to_dict())
    rows = stats.row_count.value * ratio
    scale_sample(kept, max(round(rows), 0))
    kept.row_count = Estimate.estimated(rows)
    kept.size_bytes = Estimate.exact(size_now)
    share = abs(ratio - 1)
    for column in kept.columns.values():
        low, high = _widened(column.min, column.max, share)
        if column.histogram and len(column.histogram) >= 2:
            column.histogram = [low, *column.histogram[1:-1], high]
        column.min, column.max = low, high
    return kept


def _widened(low: Any, high: Any, share: float) -> tuple[Any, Any]:
    """`low` and `high` moved apart by `share` of the span between them, on each side: numbers,
    and dates and timestamps as ISO text (in the form they came in); anything else as it was.

    >>> _widened(10, 20, 0.1), _widened(1.0, 2.0, 0.5), _widened("a", "b", 0.5)
    ((9, 21), (0.5, 2.5), ('a', 'b'))
    >>> _widened("2024-01-01 00:00:00", "2024-01-11 00:00:00", 0.1)
    ('2023-12-31 00:00:00', '2024-01-12 00:00:00')
    """
    if share <= 0 or low is None or high is None:
        return low, high
    if isinstance(low, (int, float)) and isinstance(high, (int, float)) and not isinstance(low, bool):
        step = (high - low) * share
        if isinstance(low, int) and isinstance(high, int):
            return math.floor(low - step), math.ceil(high + step)
        return low - step, high + step
    if isinstance(low, str) and isinstance(high, str):
        for fmt in ISO_DATE_FORMATS:
            try:
                first, last = _dt.datetime.strptime(low, fmt), _dt.datetime.strptime(high, fmt)
            except ValueError:
                continue
            step = (last - first) * share
            if fmt == "%Y-%m-%d":  # whole days, outward
                step = _dt.timedelta(days=math.ceil(step / _dt.timedelta(days=1)))
            return (first - step).strftime(fmt), (last + step).strftime(fmt)
    return low, high
