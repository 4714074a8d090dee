"""The hiveopt optimizer: SQL and statistics in, SQL and decisions out. Imports nothing from dbt.

>>> from dbt.adapters.hiveopt.optimizer import OptimizerContext, optimize
>>> optimize("SELECT 1 AS x", OptimizerContext()).sql
'SELECT 1 AS x'
"""

from dbt.adapters.hiveopt.optimizer.config import OptimizerConfig
from dbt.adapters.hiveopt.optimizer.context import OptimizedQuery, OptimizerContext
from dbt.adapters.hiveopt.optimizer.pipeline import RULE_NAMES, needs_statistics, optimize, value_fetches
from dbt.adapters.hiveopt.optimizer.prepare import (
    UnsupportedQuery,
    key_columns,
    parse_query,
    physical_tables,
    prepare_query,
    referenced_columns,
)
from dbt.adapters.hiveopt.optimizer.statistics import (
    ColumnStats,
    Estimate,
    Precision,
    StatsCatalog,
    TableStats,
)

__all__ = [
    "ColumnStats",
    "Estimate",
    "OptimizedQuery",
    "OptimizerConfig",
    "OptimizerContext",
    "Precision",
    "RULE_NAMES",
    "StatsCatalog",
    "TableStats",
    "UnsupportedQuery",
    "optimize",
    "parse_query",
    "key_columns",
    "needs_statistics",
    "physical_tables",
    "prepare_query",
    "referenced_columns",
    "value_fetches",
]
