"""Credentials and connections: dbt-spark's, plus an `optimizer:` block, for the embedded session a
folder of its own for the warehouse and the Derby metastore, `method: connect` (Spark Connect,
spark_connect.py), and statements bounded in time on every method but ODBC
(bounded_statements.py)."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.contracts.connection import Connection, ConnectionState
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.exceptions import FailedToConnectError
from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from dbt_common.dataclass_schema import StrEnum
from dbt_common.exceptions import DbtDatabaseError, DbtRuntimeError

from dbt.adapters.hiveopt import class_archive, spark_connect
from dbt.adapters.hiveopt.bounded_statements import LONG_POLLING_SETTINGS, with_bounded_statements
from dbt.adapters.hiveopt.processes import make_ignored_folder, spark_home
from dbt.adapters.hiveopt.statistics_store import first_line

DEFAULT_SPARK_DIR = ".hiveopt-spark"
_session_lock = threading.Lock()
logger = AdapterLogger("hiveopt")

# How many tasks a server's application runs at once: Spark splits a range() with no partition
# count into its default parallelism, which is the executors' total cores (standalone, YARN,
# Kubernetes) unless spark.default.parallelism says otherwise. One small job, once per invocation.
TASK_SLOTS_SQL = "SELECT COUNT(DISTINCT p) FROM (SELECT spark_partition_id() AS p FROM range(0, 65536))"


class ServerTaskSlots:
    """A server's task slots (its executors' total cores), asked of its cluster once per
    invocation, when a model first needs them; 0 once it could not say.

    >>> slots = ServerTaskSlots()
    >>> slots.read(lambda sql: [(4,)]), slots.read(lambda sql: [(8,)]), slots.known
    (4, 4, True)
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # its own: other threads' models go on meanwhile
        self._slots: int | None = None

    @property
    def known(self) -> bool:
        return bool(self._slots)

    def read(self, run_sql, debug=lambda message: None) -> int | None:
        with self._lock:
            if self._slots is None:
                try:
                    ((slots,),) = run_sql(TASK_SLOTS_SQL)
                    self._slots = int(slots) or 0
                except Exception as error:
                    debug(f"hiveopt: task slots not read from the server ({first_line(error)})")
                    self._slots = 0
            return self._slots or None


class HiveoptConnectionMethod(StrEnum):
    """dbt-spark's methods and Spark Connect. Members equal dbt-spark's by value ('session' ==
    SparkConnectionMethod.SESSION), so dbt-spark's own checks keep working."""

    THRIFT = "thrift"
    HTTP = "http"
    ODBC = "odbc"
    SESSION = "session"
    CONNECT = "connect"


def _project_dir() -> str:
    """The dbt project's folder (dbt's --project-dir), else the current directory."""
    try:
        from dbt.flags import get_flags  # dbt-core is present whenever dbt runs us

        project_dir = getattr(get_flags(), "PROJECT_DIR", None)
        if project_dir:
            return os.path.abspath(project_dir)
    except Exception:
        pass
    return os.getcwd()


@dataclass
class HiveoptCredentials(SparkCredentials):
    method: HiveoptConnectionMethod = None  # type: ignore[assignment]
    # Rule switches, thresholds, `verify`, `stats:` settings (see README).
    optimizer: dict[str, Any] = field(default_factory=dict)
    # session only: warehouse and metastore live here (relative paths: under the project).
    spark_dir: str | None = None
    # session only: the JVM starts from a class archive, written by the first run (class_archive.py).
    class_archive: bool = True

    @classmethod
    def __pre_deserialize__(cls, data: Any) -> Any:
        data = super().__pre_deserialize__(data)
        if str(data.get("method", "")) == "session":
            data.setdefault("host", "localhost")  # dbt-spark asks for a host even for a session
        if str(data.get("method", "")) == "connect":
            data.setdefault("port", spark_connect.DEFAULT_PORT)
        return data

    def __post_init__(self) -> None:
        super().__post_init__()
        from dbt.adapters.hiveopt.optimizer.config import validate_settings

        # Checked when the profile is read, so `dbt debug` names a bad setting before any run.
        _, problems = validate_settings(self.optimizer or {})
        if problems:
            raise DbtRuntimeError("hiveopt profile, optimizer: " + "; ".join(problems))
        if self.method == SparkConnectionMethod.SESSION:
            spark_dir = self.spark_dir or DEFAULT_SPARK_DIR
            if not os.path.isabs(spark_dir):
                spark_dir = os.path.join(_project_dir(), spark_dir)
            self.spark_dir = os.path.abspath(spark_dir)
        if self.method == HiveoptConnectionMethod.CONNECT:
            spark_connect.import_client()  # names the missing extra when the profile is read

    @property
    def type(self) -> str:
        return "hiveopt"

    def _connection_keys(self) -> tuple[str, ...]:
        return (*super()._connection_keys(), "method", "spark_dir", "class_archive", "optimizer")


# A Spark setting: an INSERT keeps the table's size in the catalog instead of dropping it. Set on
# a seed's own connection over Thrift or Connect while a new seed file loads (impl.py).
SIZES_KEPT_ON_INSERT = "spark.sql.statistics.size.autoUpdate.enabled"


def session_configs(spark_dir: str) -> dict[str, str]:
    """Static settings of an embedded session: warehouse, metastore and derby.log in spark_dir."""
    return {
        "spark.sql.warehouse.dir": os.path.join(spark_dir, "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={os.path.join(spark_dir, 'metastore_db')};create=true"
        ),
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={spark_dir} -Dlog4j2.configurationFile=file:{spark_log_settings(spark_dir)}"
        ),
        "spark.ui.showConsoleProgress": "false",
        # Not SIZES_KEPT_ON_INSERT: every INSERT would list the table's files and write its size to
        # the metastore (a 25-row seed's load, 8 pairs: 0.27 s against 0.19 s alone, 0.89 s against
        # 0.57 s beside a build's test), paid by seeds and incremental models on every build, as
        # dbt-spark's session does not. A seed loaded again from the file its statistics were
        # counted from needs no size (StatisticsService._with_reloaded_size); any other table
        # written since its size was measured gets an ANALYZE ... NOSCAN when a model reads it.
    }


# The session's own setting whose value is a list of JVM flags (session_configs): a profile's flags
# (server_side_parameters) go after the session's instead of replacing them, which would put the
# metastore's derby.log in the working folder and drop the log settings.
JVM_OPTION_SETTINGS = ("spark.driver.extraJavaOptions",)


def with_given_settings(own: dict[str, str], given: dict[str, Any]) -> dict[str, Any]:
    """The embedded session's settings with a profile's server_side_parameters: the profile's win,
    but JVM flags are added to the session's (a later flag wins in the JVM, so the profile's still do).

    >>> flags, progress = "spark.driver.extraJavaOptions", "spark.ui.showConsoleProgress"
    >>> own = {flags: "-Dderby.system.home=x", progress: "false"}
    >>> with_given_settings(own, {flags: "-XX:TieredStopAtLevel=1"})[flags]
    '-Dderby.system.home=x -XX:TieredStopAtLevel=1'
    >>> with_given_settings(own, {progress: True})[progress]
    True
    """
    merged: dict[str, Any] = dict(own)
    for key, value in given.items():
        merged[key] = f"{own[key]} {value}" if key in JVM_OPTION_SETTINGS and own.get(key) else value
    return merged


# The embedded session's log settings: Spark's defaults (warnings and errors on stderr, as pyspark
# sets them) without the lines that say nothing to a dbt user and repeat on every run or connection
# (a 101-model run printed 898: 471 "Using an existing Spark session", 268 "HiveConf of name
# hive.internal.ss.authz.settings.applied.marker does not exist", the host name, NativeCodeLoader,
# SparkUI port lines). Real warnings of every other logger, such as WindowExec's "No Partition
# Defined", still show.
QUIET_LOGGERS = (
    "org.apache.spark.sql.SparkSession",  # Using an existing Spark session (each dbt connection)
    "org.apache.spark.sql.classic.SparkSession",
    "org.apache.hadoop.hive.conf.HiveConf",  # HiveConf of name hive.internal.ss.authz... does not exist
    "org.apache.hadoop.hive.ql.session.SessionState",  # METASTORE_FILTER_HOOK will be ignored
    "org.apache.hadoop.util.NativeCodeLoader",  # Unable to load native-hadoop library
    "org.apache.spark.util.Utils",  # the host name, SPARK_LOCAL_IP, SparkUI port retries
    "org.apache.spark.sql.execution.datasources.v2.CreateNamespaceExec",  # created concurrently (threads)
    "hive.log",  # "Updating partition stats fast", "Updated size to": each save of the statistics table
)

LOG4J2_PROPERTIES = """rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.metastore.name = org.apache.hadoop.hive.metastore.RetryingHMSHandler
logger.metastore.level = fatal
logger.metastore2.name = org.apache.hadoop.hive.metastore.ObjectStore
logger.metastore2.level = error
logger.parquet.name = org.apache.parquet.CorruptStatistics
logger.parquet.level = error
"""


def make_spark_dir(spark_dir: str) -> None:
    """Create the embedded session's folder, ignored by git from the inside (dbt init, which copies
    dbt's starter project, cannot add the line to the project's .gitignore)."""
    make_ignored_folder(spark_dir, "dbt-hiveopt: the embedded Spark session's warehouse and metastore")


def spark_log_settings(spark_dir: str) -> str:
    """The log4j2 settings file of the embedded session, written under spark_dir."""
    make_spark_dir(spark_dir)
    path = os.path.join(os.path.abspath(spark_dir), "log4j2.properties")
    quiet = "".join(
        f"logger.quiet{i}.name = {name}\nlogger.quiet{i}.level = error\n" for i, name in enumerate(QUIET_LOGGERS)
    )
    text = LOG4J2_PROPERTIES + quiet
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as handle:
            handle.write(text)
    return path


def ensure_local_session(credentials: HiveoptCredentials) -> None:
    """Start the embedded SparkSession once, with its folders under the project, before dbt-spark's
    cursor asks for it (its getOrCreate then returns this one)."""
    from pyspark import SparkContext

    spark_connect.quiet_pyspark_errors()
    with _session_lock:
        if SparkContext._active_spark_context is not None:
            return
        make_spark_dir(credentials.spark_dir)
        settings = with_given_settings(session_configs(credentials.spark_dir), credentials.server_side_parameters)
        archive = _class_archive(credentials, settings[JVM_OPTION_SETTINGS[0]])
        try:
            _start_session(settings, archive)
        except Exception as error:
            if archive is None:
                raise
            archive.give_up()  # a writer's lock; an archive the JVM could not start from
            logger.warning(
                f"the embedded JVM did not start {'writing' if archive.writing else 'from'} the class "
                f"archive {archive.path} ({first_line(error)}); starting it without"
            )
            archive = None
            _start_session(settings, None)
        if archive is not None and archive.writing:
            archive.finish_at_exit(SparkContext._gateway)


def _start_session(settings: dict[str, Any], archive: class_archive.ArchivePlan | None) -> None:
    from pyspark.sql import SparkSession

    flags = JVM_OPTION_SETTINGS[0]
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in settings.items():
        builder = builder.config(key, value + " " + archive.jvm_flags() if key == flags and archive else value)
    builder.getOrCreate()


def _class_archive(credentials: HiveoptCredentials, jvm_flags: str) -> class_archive.ArchivePlan | None:
    """The class archive the embedded session's JVM starts from or writes (class_archive.py);
    None where the profile switched it off or manages class data sharing itself."""
    if not credentials.class_archive or class_archive.own_archive_flags(jvm_flags):
        return None
    command = dbt_command()
    may_write = command in (None, *MODEL_BUILDING_COMMANDS)
    try:
        found = class_archive.plan(
            class_archive.archive_dir(), class_archive.java_executable(), spark_home(), may_write=may_write
        )
    except Exception as error:  # a folder it cannot write: the JVM starts as before
        logger.debug(f"no class archive for the embedded JVM ({first_line(error)})")
        return None
    if found is not None:
        what = "writes its class archive at exit" if found.writing else "starts from its class archive"
        logger.debug(f"the embedded JVM {what}: {found.path}")
    elif not may_write:
        logger.debug(f"the embedded JVM starts without a class archive: `dbt {command}` does not write one")
    return found


# The dbt commands that build models through the optimizer. Their JVM writes the class archive
# when there is none: it loads the classes later builds use (class_archive.py), where another
# command's archive would hold fewer and never be written again; a process that is no dbt command
# (a benchmark's, a library's) writes it too.
MODEL_BUILDING_COMMANDS = ("run", "build")


def dbt_command() -> str | None:
    """This process's dbt command (`run`, `debug`...), None outside one."""
    try:
        from dbt.flags import get_flags

        which = getattr(get_flags(), "WHICH", None)
    except Exception:  # dbt-core not importable: a library call
        return None
    return str(which) if which else None


def session_task_slots() -> int | None:
    """How many tasks the embedded session runs at once (local[N]: N), or None without one."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    return int(context.defaultParallelism) if context is not None else None


def session_broadcast_threshold() -> int | None:
    """The embedded session's spark.sql.autoBroadcastJoinThreshold in bytes (-1: off), or None
    without a session: the line under which Spark broadcasts a join side by itself."""
    session = embedded_session()
    if session is None:
        return None
    try:
        return int(session._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold())
    except Exception:  # a session of another kind (Spark Connect): the default stands
        return None


def embedded_session() -> Any:
    """The process's SparkSession (the embedded one), or None."""
    from pyspark.sql import SparkSession

    # dbt's worker threads have no active session of their own: the process's session is it.
    return SparkSession.getActiveSession() or SparkSession._instantiatedSession


class HiveoptConnectionManager(SparkConnectionManager):
    TYPE = "hiveopt"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        if connection.state == ConnectionState.OPEN:
            return connection
        credentials = connection.credentials
        if credentials.method == HiveoptConnectionMethod.CONNECT:
            return cls._open_connect(connection)
        if credentials.method == SparkConnectionMethod.SESSION:
            ensure_local_session(credentials)
        connection = super().open(connection)
        connection.handle = with_bounded_statements(connection.handle, lambda: cls._open_sibling(credentials))
        return connection

    @classmethod
    def _open_sibling(cls, credentials: HiveoptCredentials) -> Any:
        """A second Thrift (or HTTP) session with the same credentials, for bounded statements
        (bounded_statements.BoundedPyhiveWrapper): dbt-spark's own open, so TLS and auth are
        the same; its PyHive connection."""
        settings = {**credentials.server_side_parameters, **LONG_POLLING_SETTINGS}
        sibling = Connection(
            type=credentials.type,
            name="hiveopt-bounded",
            credentials=dataclasses.replace(credentials, server_side_parameters=settings),
        )
        return SparkConnectionManager.open(sibling).handle.handle

    @classmethod
    def _open_connect(cls, connection: Connection) -> Connection:
        """A Spark Connect session per dbt connection; retried as dbt-spark retries its methods
        (connect_retries, connect_timeout)."""
        credentials = connection.credentials
        where = f"{credentials.host}:{credentials.port}"
        for attempt in range(1 + credentials.connect_retries):
            try:
                session = spark_connect.open_session(
                    credentials.host,
                    credentials.port,
                    credentials.token,
                    credentials.use_ssl,
                    credentials.server_side_parameters,
                )
                break
            except Exception as error:
                message = spark_connect.error_message(error) or f"{type(error).__name__}: {error}"
                if attempt >= credentials.connect_retries:
                    raise FailedToConnectError(f"Spark Connect server at {where}: {message}") from None
                logger.warning(
                    f"Spark Connect server at {where}: {message}; retrying in {credentials.connect_timeout} s "
                    f"({attempt + 1} of {credentials.connect_retries})"
                )
                time.sleep(credentials.connect_timeout)
        connection.handle = spark_connect.ConnectConnectionWrapper(session)
        connection.state = ConnectionState.OPEN
        return connection

    @contextmanager
    def exception_handler(self, sql: str) -> Iterator[None]:
        """Spark Connect's errors become dbt database errors with the server's message (no JVM
        stack trace, no gRPC dump); every other error goes through dbt-spark's handler."""
        try:
            yield
        except Exception as error:
            message = spark_connect.error_message(error)
            if message is None:
                with super().exception_handler(sql):
                    raise
            logger.debug(f"Error while running:\n{sql}")
            raise DbtDatabaseError(message) from None
