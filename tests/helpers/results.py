"""Query results as comparable rows."""

import datetime
import decimal


def rows_of(spark, sql):
    """Result rows as a multiset key: floats rounded, order ignored by the caller's Counter."""
    out = []
    for row in spark.sql(sql).collect():
        out.append(tuple(round(v, 6) if isinstance(v, float) else v for v in row))
    return out


def _plain(value):
    """One value as every client reads it alike: PyHive returns dates as text and decimals as
    Decimal, a SparkSession dates as date; floats rounded."""
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, (float, decimal.Decimal)):
        return round(float(value), 6)
    return value


def comparable(rows):
    """Rows as tuples of plain values: equal results compare equal whichever client read them."""
    return [tuple(_plain(v) for v in row) for row in rows]
