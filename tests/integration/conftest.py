import os
import subprocess
import sys

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
def thrift_server(tmp_path_factory):
    """One Spark Thrift server for the integration tests that need one (started from the pyspark
    package on a free loopback port, stopped by pid at the end, also when a test failed)."""
    from dbt.adapters.hiveopt import thrift_server as server_module

    server = server_module.start(str(tmp_path_factory.mktemp("thrift-home")))
    try:
        yield server
    finally:
        server.stop()
        assert server.process.poll() is not None
