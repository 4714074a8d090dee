"""The CLI's local SparkSession: local[2], its warehouse in a temporary folder, settings as the
test suite's session has them (tests/conftest.py), the built-in catalog (no Hive metastore: the
fuzzer's tables are Parquet data source tables either way)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def local_session(folder: str = "", driver_memory: str = "2g") -> Iterator[object]:
    from pyspark.sql import SparkSession

    owned = not folder
    folder = folder or tempfile.mkdtemp(prefix="hiveopt-fuzz-")
    builder = SparkSession.builder.master("local[2]").appName("hiveopt-fuzz")
    settings = {
        "spark.sql.warehouse.dir": f"{folder}/warehouse",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={folder}",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.memory": driver_memory,
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        if owned:
            shutil.rmtree(folder, ignore_errors=True)
