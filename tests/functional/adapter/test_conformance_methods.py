"""dbt's conformance classes (test_conformance.py, test_conformance_more.py) on the other connection
methods: over Thrift and over Spark Connect to the test cluster's SQL server (tests/conftest.py:
spark_cluster). Each class of those files appears here once per method, as TestX_thrift and
TestX_connect, with the profile target of that method; skips (Delta/Iceberg, Postgres-only
expectations) carry over with their reasons.

`make test` runs the four classes of SMOKE on both methods; the whole matrix is marked `matrix` and run
by `make test-all` (all of tests/functional on the three methods took 6 minutes on two cores: 45
passed and 13 skipped on each)."""

import inspect

import pytest
import test_conformance  # this folder is on sys.path (pytest imports its files by basename)
import test_conformance_more

# One class per kind of statement dbt sends over a connection: seeds with bound values, table and
# view materializations, incremental inserts, tests, dbt debug's connection check. (Ephemeral models
# are compiled into CTEs before anything is sent: the matrix has them.)
SMOKE = {"TestSimpleMaterializations", "TestIncremental", "TestGenericTests", "TestValidateConnection"}


@pytest.fixture(scope="class")
def dbt_profile_target(request, spark_cluster):
    """The profile target of the class's method (its `hiveopt_method`) on the test cluster."""
    if request.cls.hiveopt_method == "thrift":
        return {"type": "hiveopt", "method": "thrift", "host": "127.0.0.1", "port": spark_cluster.spec.thrift_port,
                "user": "dbt", "threads": 1}  # fmt: skip
    return {"type": "hiveopt", "method": "connect", "host": "127.0.0.1", "port": spark_cluster.spec.connect_port,
            "threads": 1}  # fmt: skip


def _on_method(base, method):
    """A subclass of the conformance class `base` that runs over `method` (this module's
    dbt_profile_target overrides the session's of tests/functional/conftest.py)."""
    marks = [pytest.mark.integration, getattr(pytest.mark, method)]
    if base.__name__ not in SMOKE:
        marks.append(pytest.mark.matrix)
    cls = type(f"{base.__name__}_{method}", (base,), {"hiveopt_method": method})
    for mark in marks:
        cls = mark(cls)
    return cls


_BASES = [
    cls
    for module in (test_conformance, test_conformance_more)
    for name, cls in inspect.getmembers(module, inspect.isclass)
    if name.startswith("Test") and cls.__module__ == module.__name__
]
for _base in _BASES:
    for _method in ("thrift", "connect"):
        _cls = _on_method(_base, _method)
        globals()[_cls.__name__] = _cls
del _base, _method, _cls
