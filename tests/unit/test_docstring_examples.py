"""The runnable examples in the optimizer's (and the statistics modules') docstrings stay true."""

import doctest
import importlib
import pkgutil

import pytest

import dbt.adapters.hiveopt.optimizer as optimizer

MODULES = sorted(name for _, name, _ in pkgutil.walk_packages(optimizer.__path__, prefix=optimizer.__name__ + ".")) + [
    optimizer.__name__,
    "dbt.adapters.hiveopt.report",
    "dbt.adapters.hiveopt.cli",
    "dbt.adapters.hiveopt.actual_rows",
    "dbt.adapters.hiveopt.statistics_service",
    "dbt.adapters.hiveopt.statistics_gathering",
    "dbt.adapters.hiveopt.table_info",
    "dbt.adapters.hiveopt.kept_statistics",
    "dbt.adapters.hiveopt.statistics_store",
    "dbt.adapters.hiveopt.feedback",
    "dbt.adapters.hiveopt.model_inputs",
    "dbt.adapters.hiveopt.spark_connect",
    "dbt.adapters.hiveopt.local_cluster",
    "dbt.adapters.hiveopt.processes",
    "dbt.adapters.hiveopt.verify",
    "dbt.adapters.hiveopt.project_graph",
    "dbt.adapters.hiveopt.key_columns",
    "dbt.adapters.hiveopt.connections",
    "dbt.adapters.hiveopt.class_archive",
    "dbt.adapters.hiveopt.statistics_share",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
