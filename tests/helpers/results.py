"""Query results as comparable rows."""


def rows_of(spark, sql):
    """Result rows as a multiset key: floats rounded, order ignored by the caller's Counter."""
    out = []
    for row in spark.sql(sql).collect():
        out.append(tuple(round(v, 6) if isinstance(v, float) else v for v in row))
    return out
