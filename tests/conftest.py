import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

pytest_plugins = ["dbt.tests.fixtures.project"]


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One local SparkSession for the whole run (dbt's session connections reuse it), with its
    warehouse and Derby metastore in a temporary folder."""
    from pyspark.sql import SparkSession

    from dbt.adapters.hiveopt.connections import session_configs

    folder = str(tmp_path_factory.mktemp("spark"))
    builder = SparkSession.builder.master("local[2]").appName("hiveopt-tests").enableHiveSupport()
    settings = {
        **session_configs(folder),
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.ansi.enabled": "false",
        "spark.driver.memory": "3g",
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
