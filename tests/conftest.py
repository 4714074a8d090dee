import os
import signal
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


def pytest_configure(config):
    """SIGTERM (CI's time limit, a killed job) ends the run as Ctrl-C does, so the session
    fixtures' finalizers stop the servers and the cluster the tests started."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """One Spark standalone cluster for every test that needs one, started once per pytest
    session from the pyspark package: a master, two workers (1 core, 1 GB each) and one SQL server
    application answering Thrift and Spark Connect, all on free loopback ports. Stopped by pid at
    the end, also when a test failed or the run was interrupted."""
    from dbt.adapters.hiveopt import local_cluster

    spec = local_cluster.ClusterSpec(str(tmp_path_factory.mktemp("cluster")), driver_memory="2g")
    cluster = local_cluster.up(spec, progress=lambda line: print(line, file=sys.stderr, flush=True))
    try:
        yield cluster
    finally:
        cluster.stop()
        assert not any(daemon.alive() for daemon in cluster.daemons)
