import os
import pathlib
import re
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


# The fixtures that reach the test cluster. Under pytest-xdist every module that names one runs on
# the same worker (one cluster starts, not one per worker): the controller, which collects nothing,
# finds them in the test files' text, and each worker checks that against its fixtures.
CLUSTER_FIXTURES = re.compile(r"(?<![.\w])(?:spark_cluster|thrift_server|connect_server)\b")  # not the module


def _test_files(root) -> list[tuple[str, str]]:
    """The test files as node ids name them, with their text, in path order."""
    paths = sorted(pathlib.Path(root, "tests").rglob("test_*.py"))
    return [(path.relative_to(root).as_posix(), path.read_text()) for path in paths]


def _modules_on_cluster(files) -> set[str]:
    """The test files (`_test_files`) whose text names a cluster fixture."""
    return {name for name, text in files if CLUSTER_FIXTURES.search(text)}


# A module of few tests behind a long setup (the fuzz slices run hundreds of queries in a
# module-scoped fixture) says `SEND_FIRST = True`. xdist orders the units by their number of
# tests, which sends such a module last, where one worker can be left running it alone while the
# other has nothing left to do.
SEND_FIRST = re.compile(r"^SEND_FIRST = True\b", re.MULTILINE)


def _modules_sent_first(files) -> list[str]:
    """The test files (`_test_files`) that say SEND_FIRST, in path order."""
    return [name for name, text in files if SEND_FIRST.search(text)]


def pytest_xdist_make_scheduler(config, log):
    """`make test` runs two workers (pytest -n 2: a quarter off the suite's wall time, as most of it
    waits on JVMs, servers and dbt's own work, not on both cores). Tests are sent a module at a time, so
    its module- and class-scoped fixtures (the fuzz slice, dbt's test projects) run once, and the
    modules on the test cluster as one unit. The longest units go out first: the test cluster's,
    then the modules that say SEND_FIRST, then the rest as xdist orders them (most tests first)."""
    from xdist.scheduler import LoadScopeScheduling

    files = _test_files(config.rootpath)
    on_cluster = _modules_on_cluster(files)
    first = ["the test cluster", *_modules_sent_first(files)]

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "the test cluster" if module in on_cluster else module

        def _assign_work_unit(self, node) -> None:
            for scope in reversed(first):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return ModuleScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """On a pytest-xdist worker: a module on the test cluster that the scheduler would not group
    (it reaches the cluster through a fixture of another name) is an error, not a second cluster."""
    if not hasattr(config, "workerinput"):
        return
    on_cluster = _modules_on_cluster(_test_files(config.rootpath))
    missed = sorted(
        {item.nodeid.split("::", 1)[0] for item in items if "spark_cluster" in item.fixturenames} - on_cluster
    )
    if missed:
        raise pytest.UsageError(f"{missed} use the test cluster without naming a fixture of {CLUSTER_FIXTURES.pattern}")
