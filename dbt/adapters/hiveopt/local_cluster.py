"""A Spark standalone cluster on this machine, from the pyspark package: a master, N workers and one
SQL server application submitted to the master, which answers Thrift (HiveThriftServer2) and Spark
Connect (Spark's Connect plugin in the same driver). `hiveopt cluster up|status|down` runs it for
people; the tests share one per pytest session.

Why one application for both protocols: an application's Derby metastore can be opened by one JVM
only, so two servers would be two warehouses (a table built over Thrift missing over Connect); and a
standalone master gives an application all the cores it has, so a second application would wait on
two one-core workers until the first ends. One driver serves both protocols over one warehouse with
every executor core.

Everything it starts is written to `<state_dir>/cluster.json` as soon as it starts, so `down` stops
by pid whatever state `up` stopped in (a failed start, Ctrl-C).

>>> spec = ClusterSpec("/tmp/c", master_port=7077, ui_port=8080, thrift_port=10000, connect_port=15002)
>>> print(profile_outputs(spec))  # doctest: +NORMALIZE_WHITESPACE
    thrift:
      type: hiveopt
      host: 127.0.0.1
      method: thrift
      port: 10000
      user: dbt
      schema: analytics
      threads: 4
    connect:
      type: hiveopt
      host: 127.0.0.1
      method: connect
      port: 15002
      schema: analytics
      threads: 4
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import Any

from dbt.adapters.hiveopt.processes import (
    Daemon,
    Progress,
    free_ports,
    listening,
    make_ignored_folder,
    spark_home,
    start_daemon,
    wait_until,
)

HOST = "127.0.0.1"
# The ports a cluster listens on, chosen free where a spec gives 0 (ClusterSpec.with_ports).
PORT_NAMES = ("master_port", "ui_port", "thrift_port", "connect_port")
THRIFT_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
STATE_FILE = "cluster.json"
# The SQL server's first start creates the Derby metastore: 60-80 s on two busy cores.
SERVER_START_TIMEOUT_SECONDS = 300
DAEMON_START_TIMEOUT_SECONDS = 120
# Master and workers schedule, they hold no data: a small heap each.
DAEMON_MEMORY = "512m"


@dataclass
class ClusterSpec:
    """Sizes and ports of a local cluster; a port of 0 means a free one, chosen at start."""

    state_dir: str
    workers: int = 2
    worker_cores: int = 1
    worker_memory: str = "1g"
    driver_memory: str = "2g"
    master_port: int = 0
    ui_port: int = 0
    thrift_port: int = 0
    connect_port: int = 0
    shuffle_partitions: int = 4
    # Extra Spark settings for the SQL server (spark.* keys).
    confs: dict[str, str] = field(default_factory=dict)

    def with_ports(self) -> ClusterSpec:
        """The same spec with every 0 port replaced by a free one: distinct, and none of the
        ports given."""
        unset = [name for name in PORT_NAMES if not getattr(self, name)]
        given = [getattr(self, name) for name in PORT_NAMES if getattr(self, name)]
        chosen = dict(zip(unset, free_ports(len(unset), taken=given)))
        return ClusterSpec(**{**asdict(self), **chosen})

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"

    @property
    def executor_memory(self) -> str:
        return self.worker_memory  # one executor per worker, as large as the worker offers


@dataclass
class Cluster:
    spec: ClusterSpec
    daemons: list[Daemon] = field(default_factory=list)

    @property
    def state_path(self) -> str:
        return os.path.join(self.spec.state_dir, STATE_FILE)

    def save(self) -> None:
        os.makedirs(self.spec.state_dir, exist_ok=True)
        with open(self.state_path + ".tmp", "w") as handle:
            json.dump({"spec": asdict(self.spec), "daemons": [d.to_dict() for d in self.daemons]}, handle, indent=2)
        os.replace(self.state_path + ".tmp", self.state_path)

    @classmethod
    def load(cls, state_dir: str) -> Cluster | None:
        path = os.path.join(state_dir, STATE_FILE)
        if not os.path.exists(path):
            return None
        with open(path) as handle:
            data = json.load(handle)
        return cls(ClusterSpec(**data["spec"]), [Daemon(**d) for d in data["daemons"]])

    def stop(self, progress: Progress = lambda line: None, own_children: bool = False) -> list[str]:
        """Stop every daemon by pid, the SQL server first and the master last; forget the state.
        Returns the names of those that were running. `own_children`: this process started them
        (see Daemon.stop)."""
        stopped = []
        for daemon in reversed(self.daemons):
            if daemon.stop(own_child=own_children):
                stopped.append(daemon.name)
                progress(f"stopped {daemon.name} (pid {daemon.pid})")
        if os.path.exists(self.state_path):
            os.remove(self.state_path)
        return stopped

    def master_status(self) -> dict[str, Any] | None:
        """The master's own account (its web UI's JSON): workers, cores, running applications."""
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.spec.ui_port}/json/", timeout=5) as response:
                return json.load(response)
        except Exception:
            return None

    def alive_workers(self) -> int:
        status = self.master_status() or {}
        return sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE")

    def executor_cores(self) -> int:
        """Cores the master granted to the running SQL server application."""
        status = self.master_status() or {}
        return sum(int(app.get("cores", 0)) for app in status.get("activeapps", []))


def daemon_env(spec: ClusterSpec) -> dict[str, str]:
    """The daemons' environment: Spark's home in the pyspark package, loopback, and their scratch
    and settings folders under the state folder."""
    home = spark_home()
    for folder in ("conf", "tmp"):
        os.makedirs(os.path.join(spec.state_dir, folder), exist_ok=True)
    return {
        **os.environ,
        "SPARK_HOME": home,
        "SPARK_LOCAL_IP": HOST,
        "SPARK_LOCAL_DIRS": os.path.join(spec.state_dir, "tmp"),
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        # Spark's defaults (INFO to the daemon's log file), not a user's conf folder elsewhere.
        "SPARK_CONF_DIR": os.path.join(spec.state_dir, "conf"),
        "SPARK_NO_DAEMONIZE": "1",
    }


def _spark_class(*args: str) -> list[str]:
    return [os.path.join(spark_home(), "bin", "spark-class"), *args]


def sql_server_command(spec: ClusterSpec, master: str, home: str, cores: int | None = None) -> list[str]:
    """spark-submit of HiveThriftServer2 with the Spark Connect plugin, its warehouse and Derby
    metastore under `home`. `master` is a spark:// URL or local[N]."""
    confs = {
        "spark.sql.warehouse.dir": os.path.join(home, "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={os.path.join(home, 'metastore_db')};create=true"
        ),
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": str(spec.shuffle_partitions),
        "spark.plugins": CONNECT_PLUGIN,
        "spark.connect.grpc.binding.address": HOST,
        "spark.connect.grpc.binding.port": str(spec.connect_port),
        "spark.executor.memory": spec.executor_memory,
        "spark.executor.cores": str(spec.worker_cores),
        **spec.confs,
    }
    command = [
        os.path.join(spark_home(), "bin", "spark-submit"),
        "--class",
        THRIFT_CLASS,
        "--name",
        "hiveopt-sql-server",
        "--master",
        master,
        "--driver-memory",
        spec.driver_memory,
        # The marker `down` checks before it signals the pid: this state folder.
        "--driver-java-options",
        f"-Dderby.system.home={home}",
    ]
    for key, value in confs.items():
        command += ["--conf", f"{key}={value}"]
    return command + [
        "spark-internal",
        "--hiveconf",
        f"hive.server2.thrift.port={spec.thrift_port}",
        "--hiveconf",
        f"hive.server2.thrift.bind.host={HOST}",
    ]


def up(spec: ClusterSpec, progress: Progress = print) -> Cluster:
    """Start the master, the workers and the SQL server; wait until each is ready, saying so.
    On any failure everything started so far is stopped again."""
    existing = Cluster.load(spec.state_dir)
    if existing and any(d.alive() for d in existing.daemons):
        raise RuntimeError(f"a cluster already runs from {spec.state_dir}: `hiveopt cluster down` first")
    spec = spec.with_ports()
    ports = [getattr(spec, name) for name in PORT_NAMES]
    if len(set(ports)) < len(ports):
        raise RuntimeError(f"the master, web UI, Thrift and Connect ports must differ: {ports}")
    for name in PORT_NAMES:
        if listening(getattr(spec, name)):
            raise RuntimeError(f"port {getattr(spec, name)} ({name}) is taken: choose another")
    # The state folder may sit in a project's folder.
    make_ignored_folder(spec.state_dir, "hiveopt cluster: pids, logs, warehouse and metastore of a local cluster")
    cluster = Cluster(spec)
    env = daemon_env(spec)
    logs = os.path.join(spec.state_dir, "logs")
    started = time.monotonic()
    try:
        progress(f"starting a Spark master on {spec.master_url} (web UI http://{HOST}:{spec.ui_port})")
        master = start_daemon(
            "master",
            _spark_class("org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(spec.master_port),
                         "--webui-port", str(spec.ui_port), "--properties-file", _defaults_file(spec)),
            os.path.join(logs, "master.log"), spec.state_dir, spec.state_dir, env,
        )  # fmt: skip
        cluster.daemons.append(master)
        cluster.save()
        seconds = wait_until(master, lambda: cluster.master_status() is not None, "its web UI",
                             DAEMON_START_TIMEOUT_SECONDS, progress)  # fmt: skip
        progress(f"  master ready in {seconds:.1f} s (pid {master.pid})")
        for number in range(1, spec.workers + 1):
            work_dir = os.path.join(spec.state_dir, f"worker-{number}")
            worker = start_daemon(
                f"worker-{number}",
                _spark_class("org.apache.spark.deploy.worker.Worker", "--host", HOST, "--webui-port", "0",
                             "--cores", str(spec.worker_cores), "--memory", spec.worker_memory,
                             "--work-dir", work_dir, spec.master_url),
                os.path.join(logs, f"worker-{number}.log"), spec.state_dir, spec.state_dir, env,
            )  # fmt: skip
            cluster.daemons.append(worker)
            cluster.save()
            progress(f"starting worker-{number} ({spec.worker_cores} core, {spec.worker_memory}, pid {worker.pid})")
        for number, worker in enumerate(cluster.daemons[1:], start=1):
            seconds = wait_until(worker, lambda n=number: cluster.alive_workers() >= n, "registration with the master",
                                 DAEMON_START_TIMEOUT_SECONDS, progress)  # fmt: skip
            progress(f"  {worker.name} registered in {seconds:.1f} s")
        home = os.path.join(spec.state_dir, "server")
        os.makedirs(home, exist_ok=True)
        server = start_daemon("sql-server", sql_server_command(spec, spec.master_url, home),
                              os.path.join(logs, "sql-server.log"), spec.state_dir, home, env)  # fmt: skip
        cluster.daemons.append(server)
        cluster.save()
        progress(
            f"starting the SQL server on the cluster (pid {server.pid}): Thrift {HOST}:{spec.thrift_port}, Spark "
            f"Connect {HOST}:{spec.connect_port} (its first start creates the metastore: up to a minute)"
        )
        seconds = wait_until(
            server,
            lambda: listening(spec.connect_port) and listening(spec.thrift_port),
            "its Thrift and Connect ports",
            SERVER_START_TIMEOUT_SECONDS,
            progress,
        )
        progress(
            f"  SQL server ready in {seconds:.1f} s (pid {server.pid}); executor cores: {cluster.executor_cores()}"
        )
    except BaseException:
        progress("start failed: stopping what was started")
        cluster.stop(progress, own_children=True)
        raise
    progress(f"cluster up in {time.monotonic() - started:.0f} s; state and logs in {spec.state_dir}")
    return cluster


def _defaults_file(spec: ClusterSpec) -> str:
    """The master's properties file, in the state folder (its path marks the master's command line)."""
    path = os.path.join(spec.state_dir, "conf", "master.conf")
    with open(path, "w") as handle:
        handle.write("# hiveopt cluster: the master's settings\nspark.deploy.spreadOut true\n")
    return path


def status_lines(state_dir: str) -> list[str]:
    """What runs, from the state file and the master's account."""
    cluster = Cluster.load(state_dir)
    if cluster is None:
        return [f"no cluster state in {state_dir}"]
    spec = cluster.spec
    lines = [
        f"{d.name:11} pid {d.pid:<8} {'running' if d.alive() else 'NOT running'}   log {d.log}" for d in cluster.daemons
    ]
    status = cluster.master_status()
    if status is None:
        lines.append(f"master web UI http://{HOST}:{spec.ui_port}: not answering")
    else:
        alive = [w for w in status.get("workers", []) if w.get("state") == "ALIVE"]
        lines.append(
            f"master {spec.master_url}: {len(alive)} workers alive, {status.get('cores', 0)} cores, "
            f"{status.get('memory', 0)} MB; applications: "
            + (", ".join(f"{a['name']} ({a.get('cores', 0)} cores)" for a in status.get("activeapps", [])) or "none")
        )
    lines.append(f"thrift  {HOST}:{spec.thrift_port}  {'listening' if listening(spec.thrift_port) else 'closed'}")
    lines.append(f"connect {HOST}:{spec.connect_port}  {'listening' if listening(spec.connect_port) else 'closed'}")
    return lines


def down(state_dir: str, progress: Progress = print) -> list[str]:
    cluster = Cluster.load(state_dir)
    if cluster is None:
        progress(f"no cluster state in {state_dir}: nothing to stop")
        return []
    stopped = cluster.stop(progress)
    progress(f"stopped {len(stopped)} processes" if stopped else "nothing was running")
    return stopped


def profile_outputs(spec: ClusterSpec, schema: str = "analytics") -> str:
    """The profile outputs that reach this cluster, to paste under a profile's `outputs:`."""
    import yaml

    common = {"type": "hiveopt", "host": HOST}
    outputs = {
        "thrift": {**common, "method": "thrift", "port": spec.thrift_port, "user": "dbt"},
        "connect": {**common, "method": "connect", "port": spec.connect_port},
    }
    for output in outputs.values():
        output.update(schema=schema, threads=4)
    text = yaml.safe_dump(outputs, sort_keys=False, indent=2)
    return "\n".join("    " + line for line in text.splitlines())
