"""Statistics of a view, derived from its definition (Hive's CBO plans a view as the query it
stands for). A view holds no data, so nothing is gathered for it: its row count and column
statistics are estimated from its SQL over the statistics of the relations it reads, the way
the estimator sizes a derived table. Heavy hitters, histograms, min/max and NDVs of the base
columns flow up through the view's projections (renamed as the view names them) and are cut
by its filters like any other estimate.

>>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
>>> schema = {"db": {"t": {"k": "int", "s": "string"}}}
>>> stats = StatsCatalog.from_dict({"db.t": {"row_count": 1000, "columns": {
...     "k": {"ndv": 100, "min": 1, "max": 100, "heavy_hitters": [[7, 400]]}}}})
>>> view = view_statistics("SELECT k AS key, s FROM db.t", schema, stats)
>>> view.row_count.value, view.row_count.precision.name, view.column("key").ndv.value
(1000.0, 'EXACT', 100.0)
>>> view.column("key").heavy_hitters
[(7, 400.0)]
>>> view_statistics("SELECT k FROM db.t WHERE k > 50", schema, stats).row_count.precision.name
'ESTIMATED'
>>> view_statistics("SELECT k FROM db.u", {"db": {"u": {"k": "int"}}}, stats) is None  # no statistics below
True
"""

from __future__ import annotations

from sqlglot import exp

from dbt.adapters.hiveopt.optimizer.estimator import Estimator
from dbt.adapters.hiveopt.optimizer.prepare import PreparedQuery, key_columns, prepare_query, referenced_columns
from dbt.adapters.hiveopt.optimizer.relation_estimates import ColumnEstimate
from dbt.adapters.hiveopt.optimizer.spark_sizes import UNKNOWN, SparkSizes
from dbt.adapters.hiveopt.optimizer.statistics import ColumnStats, Estimate, StatsCatalog, TableStats

Schema = dict[str, dict[str, dict[str, str]]]


def view_statistics(
    view_sql: str,
    schema: Schema,
    statistics: StatsCatalog,
    default_db: str | None = None,
    prepared: PreparedQuery | None = None,
) -> TableStats | None:
    """The view's statistics as the estimator derives them from its SQL, or None when its row
    count cannot be estimated (a relation below it has no statistics: rules then skip, as for
    any relation without statistics). Raises UnsupportedQuery for SQL the optimizer cannot read.
    `prepared`: `prepare_query(view_sql, schema, default_db)` when the caller has it (base_columns
    took it too: qualifying a view is most of the cost of estimating it, about 20 ms)."""
    prepared = prepared if prepared is not None else prepare_query(view_sql, schema, default_db)
    estimator = Estimator(prepared.expression, schema, statistics)
    estimate = estimator.estimate(prepared.expression)
    if estimate.rows.is_absent:
        return None
    rows = estimate.rows
    spark_bytes, _ = SparkSizes(estimator).output(prepared.expression)
    out = TableStats(
        row_count=rows,
        size_bytes=estimate.bytes(),
        # Spark plans the view as the query it stands for: its size is the tables' on disk.
        spark_bytes=Estimate.estimated(spark_bytes) if spark_bytes != UNKNOWN else Estimate.absent(),
    )
    for name, column in estimate.columns.items():
        out.columns[name] = _column_stats(column, rows)
    return out


def _column_stats(column: ColumnEstimate, rows: Estimate) -> ColumnStats:
    """A column estimate back in the terms statistics are stored in (counts, not fractions)."""
    null_count = rows * column.null_fraction if not column.null_fraction.is_absent else Estimate.absent()
    heavy = None
    if column.heavy_hitters is not None and not rows.is_absent:
        heavy = [(value, fraction * rows.value) for value, fraction in column.heavy_hitters]
    string = (column.data_type or "").split("(")[0] in ("string", "varchar", "char", "binary")
    return ColumnStats(
        ndv=column.ndv,
        null_count=null_count,
        avg_width=column.width if string else Estimate.absent(),
        min=column.min,
        max=column.max,
        data_type=column.data_type,
        heavy_hitters=heavy,
        histogram=column.histogram,
    )


def base_key_columns(
    view_sql: str, schema: Schema, view_keys: set[str], default_db: str | None = None
) -> dict[str, set[str]]:
    """The base columns to gather key detail (heavy hitters, histograms) for, by `db.table`:
    the view's own join and filter keys, and the base columns behind the view columns a model
    uses as keys (a projection that is a plain column, possibly renamed).

    >>> schema = {"db": {"t": {"k": "int", "s": "string"}, "u": {"k": "int"}}}
    >>> base_key_columns("SELECT k AS key, s FROM db.t", schema, {"key"})
    {'db.t': {'k'}}
    >>> sorted(base_key_columns("SELECT t.s FROM db.t JOIN db.u ON t.k = u.k", schema, set()).items())
    [('db.t', {'k'}), ('db.u', {'k'})]
    """
    return base_columns(view_sql, schema, view_keys, None, default_db)[0]


def base_columns(
    view_sql: str,
    schema: Schema,
    view_keys: set[str],
    view_used: set[str] | None,
    default_db: str | None = None,
    prepared: PreparedQuery | None = None,
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(key columns, used columns) of the view's base tables, by `db.table`, for a model that
    uses `view_keys` of the view's columns as keys and reads `view_used` of them (None: all).
    Used base columns are those the view's own clauses read and those behind the projections the
    model reads: statistics passes read only these (and numbers and dates), not every column.

    >>> schema = {"db": {"t": {"k": "int", "s": "string", "c": "string"}}}
    >>> keys, used = base_columns("SELECT k AS key, upper(s) AS name, c FROM db.t WHERE c <> ''", schema,
    ...                           set(), {"name"})
    >>> sorted(used["db.t"])
    ['c', 's']
    """
    expression = (prepared if prepared is not None else prepare_query(view_sql, schema, default_db)).expression
    keys = key_columns(expression)
    select = expression if isinstance(expression, exp.Select) else None
    if select is not None and view_keys:
        sources = _table_sources(select)
        wanted = {k.lower() for k in view_keys}
        for projection in select.selects:
            inner = projection.unalias()
            if projection.alias_or_name.lower() in wanted and isinstance(inner, exp.Column):
                table = sources.get(inner.table.lower())
                if table:
                    keys.setdefault(table, set()).add(inner.name.lower())
    if select is not None and view_used is not None:
        # Projections the model does not read contribute no columns (a literal in their place).
        wanted = {c.lower() for c in view_used}
        select = select.copy()
        for projection in list(select.selects):
            if projection.alias_or_name.lower() not in wanted:
                projection.replace(exp.alias_(exp.Literal.number(1), projection.alias_or_name))
        expression = select
    used = referenced_columns(expression)
    for table, columns in keys.items():
        used.setdefault(table, set()).update(columns)
    return keys, used


def _table_sources(select: exp.Select) -> dict[str, str]:
    """alias -> `db.table` for the plain tables of a block's FROM and joins."""
    out: dict[str, str] = {}
    items: list[exp.Expression] = [select.args["from_"].this] if select.args.get("from_") else []
    items += [join.this for join in select.args.get("joins") or []]
    for item in items:
        if isinstance(item, exp.Table) and item.db:
            out[item.alias_or_name.lower()] = f"{item.db}.{item.name}".lower()
    return out
