"""Numbers for people: row counts and sizes as the join trees, decision reasons, explain and the
HTML report print them.

>>> human_rows(600_572), human_bytes(644_161)
('600,572 rows', '629.1 KB')
"""

from __future__ import annotations


def human_rows(rows: float | None) -> str:
    """Row counts for people.

    >>> human_rows(1), human_rows(12_345), human_rows(6_001_215), human_rows(None)
    ('1 row', '12,345 rows', '6.0M rows', 'rows unknown')
    """
    if rows is None:
        return "rows unknown"
    if rows >= 1_000_000_000:
        return f"{rows / 1e9:.1f}G rows"
    if rows >= 1_000_000:
        return f"{rows / 1e6:.1f}M rows"
    return "1 row" if round(rows) == 1 else f"{round(rows):,} rows"


def human_bytes(size: float | None) -> str:
    """Sizes for people (binary units, as Spark's thresholds).

    >>> human_bytes(512), human_bytes(27_000), human_bytes(45 * 2**20), human_bytes(None)
    ('512 B', '26.4 KB', '45.0 MB', 'size unknown')
    """
    if size is None:
        return "size unknown"
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{round(size)} B"
