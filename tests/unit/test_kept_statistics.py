"""Stale statistics kept across a small change of size (stats.keep_within_size): scaled as a
sample is, ranges widened so that appended keys past the old maximum are not estimated at 0 rows,
never kept past the factor, and the stored statistics left as they were."""

import pytest

from dbt.adapters.hiveopt.kept_statistics import kept_statistics
from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
from dbt.adapters.hiveopt.optimizer.statistics import ColumnStats, Estimate, Precision, StatsCatalog, TableStats

SCHEMA = {"db": {"o": {"order_key": "bigint", "status": "string", "order_date": "date"}}}

STORED = {
    "row_count": {"value": 100000, "precision": "EXACT"},
    "size_bytes": {"value": 1000000, "precision": "EXACT"},
    "columns": {
        "order_key": {
            "ndv": {"value": 100000, "precision": "ESTIMATED"},
            "null_count": {"value": 0, "precision": "EXACT"},
            "min": 1,
            "max": 100000,
        },
        "status": {
            "ndv": {"value": 3, "precision": "ESTIMATED"},
            "null_count": {"value": 10, "precision": "EXACT"},
            "min": "F",
            "max": "P",
            "heavy_hitters": [["F", 50000], ["O", 49000]],
        },
        "order_date": {
            "ndv": {"value": 1000, "precision": "ESTIMATED"},
            "null_count": {"value": 0, "precision": "EXACT"},
            "min": "2021-01-01",
            "max": "2023-09-27",
            "histogram": ["2021-01-01", "2022-05-15", "2023-09-27"],
        },
    },
    "fingerprint": "Mon Jan 01|1000000",
    "collected_at": "2026-11-20T00:00:00+00:00",
}


def stored() -> TableStats:
    return TableStats.from_dict(STORED)


def test_counts_follow_the_size_and_every_number_is_an_estimate():
    kept = kept_statistics(stored(), size_now=1_030_000, factor=1.1)
    assert kept.row_count.value == 103000 and kept.row_count.precision == Precision.ESTIMATED
    assert kept.size_bytes.value == 1_030_000
    assert round(kept.column("order_key").ndv.value) == 103000  # a unique key grows with the table
    assert kept.column("status").ndv.value == 3  # a status column does not
    assert kept.column("status").null_count.value == 10.3
    assert kept.column("status").heavy_hitters == [("F", 51500.0), ("O", 50470.0)]
    assert all(c.null_count.precision == Precision.ESTIMATED for c in kept.columns.values())


def test_a_shrunk_table_keeps_its_distinct_values_under_its_rows():
    kept = kept_statistics(stored(), size_now=950_000, factor=1.1)
    assert kept.row_count.value == 95000
    assert kept.column("order_key").ndv.value <= 95000


def test_past_the_factor_or_without_sizes_nothing_is_kept():
    assert kept_statistics(stored(), size_now=1_200_000, factor=1.1) is None
    assert kept_statistics(stored(), size_now=800_000, factor=1.1) is None
    assert kept_statistics(stored(), size_now=1_030_000, factor=1.0) is None  # off
    assert kept_statistics(stored(), size_now=None, factor=1.1) is None
    no_size = stored()
    no_size.size_bytes = Estimate.absent()
    assert kept_statistics(no_size, size_now=1_030_000, factor=1.1) is None


def test_the_stored_statistics_are_left_as_they_were():
    original = stored()
    kept_statistics(original, size_now=1_050_000, factor=1.1)
    assert original.to_dict() == stored().to_dict()


def test_a_filter_on_keys_past_the_old_maximum_is_not_estimated_at_nothing():
    """A daily load appends today's orders: with the old maximum, `order_date > max` would be
    estimated at 0 rows and its side broadcast whatever it holds."""
    sql = "SELECT order_key FROM db.o WHERE order_date > DATE '2023-09-27'"

    def rows(stats: TableStats) -> float:
        query = prepare_query(sql, SCHEMA).expression
        return Estimator(query, SCHEMA, StatsCatalog({"db.o": stats})).estimate(query).rows.value

    assert rows(stored()) == 0.0
    kept = kept_statistics(stored(), size_now=1_010_000, factor=1.1)
    assert kept.column("order_date").histogram[0] < "2021-01-01"
    assert 100 < rows(kept) < 0.05 * 101000  # about the 1% of rows the load added


def test_numbers_and_strings_are_widened_as_they_can_be():
    table = TableStats(
        row_count=Estimate.exact(10),
        size_bytes=Estimate.exact(100),
        columns={"x": ColumnStats(min=0.5, max=1.5), "name": ColumnStats(min="a", max="z")},
    )
    kept = kept_statistics(table, size_now=110, factor=1.5)
    assert (kept.column("x").min, kept.column("x").max) == (pytest.approx(0.4), pytest.approx(1.6))
    assert (kept.column("name").min, kept.column("name").max) == ("a", "z")
