"""The runnable examples in the optimizer's docstrings stay true."""

import doctest
import importlib
import pkgutil

import pytest

import dbt.adapters.hiveopt.optimizer as optimizer

MODULES = sorted(name for _, name, _ in pkgutil.walk_packages(optimizer.__path__, prefix=optimizer.__name__ + ".")) + [
    optimizer.__name__,
    "dbt.adapters.hiveopt.report",
    "dbt.adapters.hiveopt.statistics_service",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
