"""Start and stop a local Spark Thrift server from the pyspark package (for tests and trying
`method: thrift` on one machine): HiveThriftServer2 on a free loopback port, with its own
warehouse and Derby metastore folder, stopped by pid.

    python -m dbt.adapters.hiveopt.thrift_server /tmp/thrift-home   # prints the port, Ctrl-C stops
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

THRIFT_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
STARTUP_TIMEOUT_SECONDS = 180


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


@dataclass
class ThriftServer:
    home: str
    port: int
    process: subprocess.Popen
    log_path: str

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)

    def log_tail(self, lines: int = 40) -> str:
        with open(self.log_path, errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def start(home: str, port: int | None = None, cores: int = 2, memory: str = "2g") -> ThriftServer:
    os.makedirs(home, exist_ok=True)
    port = port or free_port()
    spark_home = _spark_home()
    log_path = os.path.join(home, "thriftserver.log")
    command = [
        os.path.join(spark_home, "bin", "spark-submit"),
        "--class",
        THRIFT_CLASS,
        "--name",
        "hiveopt-thrift",
        "--master",
        f"local[{cores}]",
        "--driver-memory",
        memory,
        "--driver-java-options",
        f"-Dderby.system.home={home}",
        "--conf",
        f"spark.sql.warehouse.dir={os.path.join(home, 'warehouse')}",
        "--conf",
        "spark.hadoop.javax.jdo.option.ConnectionURL=jdbc:derby:;"
        f"databaseName={os.path.join(home, 'metastore_db')};create=true",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.shuffle.partitions=4",
        "spark-internal",
        "--hiveconf",
        f"hive.server2.thrift.port={port}",
        "--hiveconf",
        "hive.server2.thrift.bind.host=127.0.0.1",
    ]
    env = {**os.environ, "SPARK_HOME": spark_home, "SPARK_LOCAL_IP": "127.0.0.1"}
    log = open(log_path, "w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=home, env=env, start_new_session=True)
    server = ThriftServer(home, port, process, log_path)
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Thrift server exited with {process.returncode}:\n{server.log_tail()}")
        if _listening(port):
            return server
        time.sleep(1)
    server.stop()
    raise RuntimeError(f"Thrift server did not listen on {port} in {STARTUP_TIMEOUT_SECONDS}s:\n{server.log_tail()}")


if __name__ == "__main__":
    server = start(sys.argv[1] if len(sys.argv) > 1 else os.path.abspath(".hiveopt-thrift"))
    print(f"Spark Thrift server listening on 127.0.0.1:{server.port} (pid {server.process.pid}); Ctrl-C stops it")
    try:
        server.process.wait()
    except KeyboardInterrupt:
        server.stop()
