"""dbt's adapter conformance suite (dbt-tests-adapter) against `type: hiveopt` on the local
session. HIVEOPT_FUNCTIONAL_TYPE=spark runs the same classes on plain dbt-spark, for comparison."""

import os

import pytest


@pytest.fixture(scope="class")
def dbt_profile_target(spark):
    return {
        "type": os.environ.get("HIVEOPT_FUNCTIONAL_TYPE", "hiveopt"),
        "method": "session",
        "host": "localhost",
        "threads": 1,
    }
