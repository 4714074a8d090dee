import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from helpers.dbt_run import EXAMPLE, REPO


@pytest.fixture(scope="session")
def tpch_dir():
    """The example project's TPC-H Parquet data (made by `make data`; made here if missing)."""
    folder = os.environ.get("HIVEOPT_TPCH_DIR") or os.path.join(REPO, "data", "tpch-0.1")
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    subprocess.run(["bash", os.path.join(EXAMPLE, "scripts", "generate_tpch.sh"), "0.1", folder], check=True, env=env)
    os.environ["HIVEOPT_TPCH_DIR"] = folder
    return folder


@pytest.fixture(scope="session")
def thrift_server(spark_cluster):
    """The Thrift endpoint of the test cluster's SQL server (tests/conftest.py: spark_cluster)."""
    return SimpleNamespace(host="127.0.0.1", port=spark_cluster.spec.thrift_port)


@pytest.fixture(scope="session")
def connect_server(spark_cluster):
    """The Spark Connect endpoint of the test cluster's SQL server."""
    return SimpleNamespace(host="127.0.0.1", port=spark_cluster.spec.connect_port)
