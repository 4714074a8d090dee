"""Spark's own size of a relation, as its planner sees it before running anything: what decides
whether Spark broadcasts a join side by itself (`spark.sql.autoBroadcastJoinThreshold`). Without
column statistics (CBO off, Spark's default) Spark sizes a plan with SizeInBytesOnlyStatsPlanVisitor:
a table is its size on disk; a filter keeps its child's size; a projection or an aggregate scales
it by the ratio of the row sizes (8 bytes plus each field's `defaultSize`: 20 for a string, 4 for
an int, ...); a join is the product of its sides' sizes (a semi or anti join: its left side); an
aggregate without GROUP BY is one row, a LIMIT n is n rows; a view is the plan it stands for.
What our estimator says of the rows after filters does not enter: that is what Spark does not know.

>>> from dbt.adapters.hiveopt.optimizer.estimator import Estimator
>>> from dbt.adapters.hiveopt.optimizer.prepare import prepare_query
>>> from dbt.adapters.hiveopt.optimizer.statistics import StatsCatalog
>>> schema = {"db": {"d": {"k": "int", "name": "string", "note": "string"}}}
>>> stats = StatsCatalog.from_dict({"db.d": {"row_count": 10**6, "size_bytes": 60 * 2**20}})
>>> q = prepare_query("SELECT d.k FROM db.d AS d WHERE d.name = 'x'", schema).expression
>>> sizes = SparkSizes(Estimator(q, schema, stats))
>>> round(sizes.source(q, "d", {"k"}) / 2**20, 1)  # 60 MB on disk x (8 + 4) / (8 + 4 + 20 + 20)
13.8
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dbt.adapters.hiveopt.optimizer.relation_estimates import TYPE_WIDTHS
from dbt.adapters.hiveopt.optimizer.spark_types import expression_type, parse_decimal, sum_type
from dbt.adapters.hiveopt.optimizer.syntax import aliases_of, conjuncts, own_aggregate

UNKNOWN = math.inf

# Spark's DataType.defaultSize, by type name (the estimator's fixed widths are Spark's too); a
# type not listed counts as a string.
DEFAULT_SIZES = {**TYPE_WIDTHS, "real": 4, "string": 20, "varchar": 20, "char": 20, "binary": 100}
_ROW_HEADER = 8


def default_size(data_type: str | None) -> int:
    """Spark's defaultSize of a type (decimals: 8 up to 18 digits, else 16).

    >>> default_size("decimal(15,2)"), default_size("decimal(38,4)"), default_size("int"), default_size(None)
    (8, 16, 4, 8)
    """
    if data_type is None:
        return 8  # an expression of unknown type: most are numbers
    decimal = parse_decimal(data_type)
    if decimal is not None:
        return 8 if decimal[0] <= 18 else 16
    return DEFAULT_SIZES.get(data_type.split("(")[0].split("<")[0].strip().lower(), 20)


def row_size(types: Iterable[str | None]) -> int:
    """Spark's EstimationUtils.getSizePerRow: 8 bytes and each field's default size."""
    return _ROW_HEADER + sum(default_size(t) for t in types)


def columns_above_filters(scope: Scope, alias: str) -> set[str]:
    """The columns a block needs of one of its relations above that relation's own filters (a
    WHERE or ON conjunct that reads only it, which Spark pushes down to the scan): what Spark's
    plan projects the relation to, and so sizes it by.

    >>> from sqlglot import parse_one
    >>> from sqlglot.optimizer.scope import build_scope
    >>> scope = build_scope(parse_one("SELECT d.k, f.v FROM f JOIN d ON f.k = d.k AND d.c = 1 WHERE d.x > 2"))
    >>> sorted(columns_above_filters(scope, "d")), sorted(columns_above_filters(scope, "f"))
    (['k'], ['k', 'v'])
    """
    select = scope.expression
    where = select.args.get("where")
    pushed = [p for p in conjuncts(where.this if where else None) if aliases_of(p) == {alias}]
    for join in select.args.get("joins") or []:
        side, joined = (join.side or "").upper(), join.this.alias_or_name
        # An ON filter reaches the scan of an inner join's sides and of an outer join's
        # null-supplying side; on the preserved side it filters nothing.
        if side == "FULL" or (side == "LEFT" and joined != alias) or (side == "RIGHT" and joined == alias):
            continue
        pushed += [p for p in conjuncts(join.args.get("on")) if aliases_of(p) == {alias}]
    local = {id(c) for predicate in pushed for c in predicate.find_all(exp.Column)}
    return {c.name.lower() for c in scope.columns if c.table == alias and id(c) not in local}


class SparkSizes:
    """Spark's static sizes of the relations of one query, over the estimator's scopes and
    statistics (a table's size on disk, a view's `spark_bytes`). Unknown is infinite: Spark
    broadcasts nothing it cannot size."""

    def __init__(self, estimator):
        self.estimator = estimator
        self._memo: dict[int, tuple[float, dict[str, str | None]]] = {}

    def source(self, node: exp.Expression | Scope, alias: str, columns: Iterable[str] | None = None) -> float:
        """Spark's size of `alias` in the block of `node` (a SELECT or its scope), reading
        `columns` of it (default: the columns the block needs of it above its own filters, as
        Spark's plan projects them once the filters are pushed down)."""
        scope = node if isinstance(node, Scope) else self.estimator.scopes.get(id(node))
        if scope is None:
            return UNKNOWN
        if columns is None:
            columns = columns_above_filters(scope, alias)
        full, types = self._source(scope.sources.get(alias))
        if columns is None or not types or full == UNKNOWN:
            return full
        read = [types.get(c.lower()) for c in columns]
        return max(full * row_size(read) / row_size(types.values()), 1.0)

    def _source(self, source) -> tuple[float, dict[str, str | None]]:
        if isinstance(source, exp.Table):
            return self._table(source)
        if isinstance(source, Scope):
            return self.output(source.expression)
        return UNKNOWN, {}

    def _table(self, table: exp.Table) -> tuple[float, dict[str, str | None]]:
        schema = self.estimator.schema
        types = dict(schema.get(table.db.lower(), {}).get(table.name.lower(), {})) if table.db else {}
        stats = self.estimator.statistics.get(".".join(p for p in (table.db, table.name) if p))
        if stats is None:
            return UNKNOWN, types
        size = stats.spark_bytes if not stats.spark_bytes.is_absent else stats.size_bytes
        return (UNKNOWN if size.is_absent else max(size.value, 1.0)), types

    def output(self, node: exp.Expression) -> tuple[float, dict[str, str | None]]:
        """Spark's size of a query's whole output, and its columns' types."""
        key = id(node)
        if key not in self._memo:
            self._memo[key] = self._output(node)
        return self._memo[key]

    def _output(self, node: exp.Expression) -> tuple[float, dict[str, str | None]]:
        if isinstance(node, exp.Subquery):
            return self.output(node.this)
        if isinstance(node, exp.SetOperation):
            (left, types), (right, _) = self.output(node.left), self.output(node.right)
            if isinstance(node, exp.Union):
                return left + right, types
            return (min(left, right) if isinstance(node, exp.Intersect) else left), types
        if not isinstance(node, exp.Select):
            return UNKNOWN, {}
        scope = self.estimator.scopes.get(id(node))
        if scope is None:
            return UNKNOWN, {}
        size, read_types = self._inputs(scope, node)
        types = {p.alias_or_name.lower(): self._type(p.unalias(), scope) for p in node.selects}
        out = row_size(types.values())
        limit = node.args.get("limit")
        if limit is not None and isinstance(limit.expression, exp.Literal) and limit.expression.is_int:
            return float(int(limit.expression.name) * out), types
        if not node.args.get("group") and any(own_aggregate(p) for p in node.selects):
            return float(out), types  # one row
        if size == UNKNOWN:
            return UNKNOWN, types
        return max(size * out / row_size(read_types), 1.0), types

    def _inputs(self, scope: Scope, select: exp.Select) -> tuple[float, list[str | None]]:
        """The FROM clause's size (a product over its joins; semi and anti joins keep the left)
        and the types of the columns the block reads from it."""
        source = select.args.get("from_")
        if source is None:
            return 1.0, []
        size, read_types = 1.0, []
        items = [(source.this, "")] + [(j.this, (j.kind or "").upper()) for j in select.args.get("joins") or []]
        for item, kind in items:
            alias = item.alias_or_name
            columns = columns_above_filters(scope, alias)
            if kind in ("SEMI", "ANTI"):
                continue
            full, types = self._source(scope.sources.get(alias))
            if full == UNKNOWN:
                return UNKNOWN, []
            read = [types.get(c) for c in columns]
            size *= max(full * row_size(read) / row_size(types.values()), 1.0) if types else full
            read_types += read
        return size, read_types

    def _type(self, node: exp.Expression, scope: Scope) -> str | None:
        def column_type(column: exp.Column) -> str | None:
            _, types = self._source(scope.sources.get(column.table))
            return types.get(column.name.lower())

        if isinstance(node, exp.Column):
            return column_type(node)
        if isinstance(node, exp.Count):
            return "bigint"
        if isinstance(node, (exp.Min, exp.Max)):
            return self._type(node.this, scope)
        if isinstance(node, exp.Sum):
            return sum_type(expression_type(node.this, column_type)) or "double"
        return expression_type(node, column_type)
