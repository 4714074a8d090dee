"""One SQL server JVM in local mode (no cluster), from the pyspark package: Thrift and Spark Connect
on free loopback ports, its own warehouse and Derby metastore, stopped by pid. For a cluster of
several processes use `hiveopt cluster up` (local_cluster.py).

    python -m dbt.adapters.hiveopt.thrift_server /tmp/thrift-home   # progress, then the ports;
                                                                   # Ctrl-C or SIGTERM stops it
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass

from dbt.adapters.hiveopt.local_cluster import SERVER_START_TIMEOUT_SECONDS, ClusterSpec, daemon_env, sql_server_command
from dbt.adapters.hiveopt.processes import Daemon, Progress, listening, start_daemon, wait_until


@dataclass
class ThriftServer:
    home: str
    port: int
    connect_port: int
    daemon: Daemon

    def stop(self) -> None:
        self.daemon.stop()

    def log_tail(self, lines: int = 40) -> str:
        return self.daemon.log_tail(lines)


def start(
    home: str, port: int | None = None, cores: int = 2, memory: str = "2g", progress: Progress = lambda line: None
) -> ThriftServer:
    os.makedirs(home, exist_ok=True)
    # The spec chooses its free ports together (a master's it leaves unused here: local mode).
    spec = ClusterSpec(home, thrift_port=port or 0, driver_memory=memory).with_ports()
    daemon = start_daemon("sql-server", sql_server_command(spec, f"local[{cores}]", home),
                          os.path.join(home, "thriftserver.log"), home, home, daemon_env(spec))  # fmt: skip
    server = ThriftServer(home, spec.thrift_port, spec.connect_port, daemon)
    try:
        wait_until(daemon, lambda: listening(spec.thrift_port) and listening(spec.connect_port),
                   "its Thrift and Connect ports", SERVER_START_TIMEOUT_SECONDS, progress)  # fmt: skip
    except BaseException:
        server.stop()
        raise
    return server


def main() -> None:
    home = sys.argv[1] if len(sys.argv) > 1 else os.path.abspath(".hiveopt-thrift")
    print(f"starting a Spark SQL server (local mode), log {os.path.join(home, 'thriftserver.log')}", flush=True)
    server = start(home, progress=lambda line: print(line, flush=True))

    def stop(signum: int, frame: object) -> None:
        server.stop()  # the JVM runs in a process group of its own: stop it, then go
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    print(
        f"Thrift 127.0.0.1:{server.port}, Spark Connect 127.0.0.1:{server.connect_port} (pid {server.daemon.pid}); "
        "Ctrl-C or SIGTERM stops it",
        flush=True,
    )
    try:
        os.waitpid(server.daemon.pid, 0)  # until the JVM ends, or a signal stops us (and it)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
