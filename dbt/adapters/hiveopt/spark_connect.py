"""`method: connect`: dbt's statements, and hiveopt's (DESCRIBE, statistics, the value fetch,
verify), through the Spark Connect client of the installed pyspark.

One dbt connection is one Spark Connect session on the server (its temporary views and settings
are its own, as a Thrift connection's are). Every statement of a connection carries the
connection's operation tag, so dbt's cancel (Ctrl-C) interrupts exactly that connection's work;
a bounded statement carries a tag of its own, which a timer interrupts at the deadline.

>>> connect_url("spark.example.com", 15002, token="t0k;en", use_ssl=True)
'sc://spark.example.com:15002/;use_ssl=true;token=t0k%3Ben'
>>> connect_url("127.0.0.1", 15002)
'sc://127.0.0.1:15002'
>>> placeholders_to_markers("insert into t values (cast(%s as int), cast(%s as string))")
'insert into t values (cast(? as int), cast(? as string))'
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
import warnings
from typing import Any
from urllib.parse import quote

from dbt.adapters.spark.connections import SparkConnectionWrapper

DEFAULT_PORT = 15002
# The client retries an unreachable server with growing pauses; its default keeps trying for 10
# minutes, which a `dbt debug` against a stopped server would sit through. 4 retries wait about
# 4 s in all (50 ms x 4^n); the profile's connect_retries add whole attempts beyond that.
CONNECT_CLIENT_RETRIES = 4
# Set on every session: the client fetches the JVM stack trace of each error when this is on,
# and dbt's users need the server's message, not the trace.
SESSION_SETTINGS = {"spark.sql.connect.serverStacktrace.enabled": "false"}
# pyspark logs every SQL error with a query context as a JSON line on stderr (its
# SQLQueryContextLogger) before raising it, on Spark Connect and on an embedded session alike;
# dbt reports the same error once, as a dbt error.
_PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
_MARKER = re.compile(r"%s")


def connect_url(host: str, port: int, token: str | None = None, use_ssl: bool = False) -> str:
    """The `sc://` connection string of Spark Connect; the token is quoted (';' separates params)."""
    params = (["use_ssl=true"] if use_ssl else []) + ([f"token={quote(token, safe='')}"] if token else [])
    return f"sc://{host}:{port}" + ("/;" + ";".join(params) if params else "")


def placeholders_to_markers(sql: str) -> str:
    """dbt-spark writes a seed's values as `%s` (its pyformat bindings); Spark Connect binds
    positional `?` markers as typed literals on the server: no value is spliced into the text."""
    return _MARKER.sub("?", sql)


def quiet_pyspark_errors() -> None:
    for name in _PYSPARK_ERROR_LOGGERS:
        logging.getLogger(name).disabled = True


def import_client():
    """The Spark Connect SparkSession class; DbtRuntimeError naming the extra if it is missing."""
    from dbt_common.exceptions import DbtRuntimeError

    try:
        with warnings.catch_warnings():
            # pyspark warns on import about pandas versions it has not been tested with.
            warnings.simplefilter("ignore", FutureWarning)
            from pyspark.sql.connect.session import SparkSession
    except ImportError as error:
        raise DbtRuntimeError(
            "method: connect needs pyspark's Spark Connect client: pip install 'pyspark[connect]' "
            f"(ImportError: {error})"
        ) from error
    quiet_pyspark_errors()
    return SparkSession


def error_message(error: BaseException) -> str | None:
    """The server's message of a Spark Connect error, without the JVM stack trace or the gRPC
    call's dump; None for any other exception."""
    try:
        from pyspark.errors.exceptions.connect import SparkConnectException
    except ImportError:
        return None
    if not isinstance(error, SparkConnectException):
        return None
    message = error.getMessage() if hasattr(error, "getMessage") else str(error)
    message = message.split("\n\nJVM stacktrace:", 1)[0].strip()
    # An unreachable server: the client's message is the gRPC call's repr; its details say why.
    details = re.search(r'details = "([^"]*)"', message)
    if details:
        code = re.search(r"status = StatusCode\.(\w+)", message)
        message = f"{details.group(1)} (gRPC {code.group(1) if code else 'error'})"
    return message


def open_session(host: str, port: int, token: str | None, use_ssl: bool, settings: dict[str, str]):
    """A new Spark Connect session (not the process's default one: each dbt connection has its
    own), with `settings` applied: the first calls reach the server, so an unreachable server or
    a setting it refuses fails here, when dbt opens the connection."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    SparkSession = import_client()
    session = SparkSession.builder.remote(connect_url(host, port, token, use_ssl)).create()
    session.client.set_retry_policies([DefaultPolicy(max_retries=CONNECT_CLIENT_RETRIES)])
    try:
        for key, value in {**SESSION_SETTINGS, **settings}.items():
            session.conf.set(key, value)
    except Exception:
        session.stop()
        raise
    return session


class _Cursor:
    """One statement's DataFrame, read as a DB-API cursor (what dbt's SQL connection manager reads)."""

    def __init__(self, session: Any, tag: str):
        self.session = session
        self.tag = tag
        self._df = None
        self._rows: list | None = None

    def execute(self, sql: str, bindings: list[Any] | None = None) -> None:
        # Thread-local on the client: set in the thread that runs the statement.
        self.session.addTag(self.tag)
        if bindings:
            self._df = self.session.sql(placeholders_to_markers(sql), args=list(bindings))
        else:
            self._df = self.session.sql(sql)  # commands run here; a query runs on fetch
        self._rows = None

    @property
    def description(self) -> list[tuple]:
        if self._df is None:
            return []
        return [(f.name, f.dataType.simpleString(), None, None, None, None, f.nullable) for f in self._df.schema.fields]

    def fetchall(self) -> list:
        if self._rows is None and self._df is not None:
            self._rows = self._df.collect()
        return self._rows or []

    def fetchmany(self, size: int) -> list:
        if self._df is None:
            return []
        return self._df.limit(size).collect()

    def fetchone(self):
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def close(self) -> None:
        self._df = None
        self._rows = None


class ConnectConnectionWrapper(SparkConnectionWrapper):
    """dbt-spark's connection wrapper contract over one Spark Connect session."""

    def __init__(self, session: Any):
        self.session = session
        self.tag = f"hiveopt-connection-{uuid.uuid4().hex[:12]}"
        self._cursor: _Cursor | None = None

    def cursor(self) -> ConnectConnectionWrapper:
        self._cursor = _Cursor(self.session, self.tag)
        return self

    def execute(self, sql: str, bindings: list[Any] | None = None) -> None:
        if sql.strip().endswith(";"):
            sql = sql.strip()[:-1]
        assert self._cursor, "Cursor not available"
        self._cursor.execute(sql, bindings)

    def fetchall(self) -> list:
        assert self._cursor, "Cursor not available"
        return self._cursor.fetchall()

    def fetchmany(self, size: int) -> list:
        assert self._cursor, "Cursor not available"
        return self._cursor.fetchmany(size)

    def fetchone(self):
        assert self._cursor, "Cursor not available"
        return self._cursor.fetchone()

    @property
    def description(self) -> list[tuple]:
        assert self._cursor, "Cursor not available"
        return self._cursor.description

    def cancel(self) -> None:
        """dbt's cancel (Ctrl-C, a failed run): interrupt what this connection runs on the server."""
        try:
            self.session.interruptTag(self.tag)
        except Exception:
            pass  # the server may be gone already: nothing left to interrupt

    def close(self) -> None:
        if self._cursor:
            self._cursor.close()
        self.session.stop()  # releases the session (and its temporary views) on the server

    def rollback(self, *args: Any, **kwargs: Any) -> None:
        pass  # no transactions on Spark

    def run_bounded(self, sql: str, deadline: float) -> list[tuple]:
        return run_bounded_on_connect(self.session, sql, deadline)


def run_bounded_on_connect(session: Any, sql: str, deadline: float) -> list[tuple]:
    """Rows of `sql`, or TimeoutError once `deadline` (time.perf_counter()) passes: the statement
    carries an operation tag of its own, and a timer interrupts that tag on the server."""
    remaining = deadline - time.perf_counter()
    if remaining <= 0:
        raise TimeoutError("no time left")
    tag = f"hiveopt-bounded-{uuid.uuid4().hex[:12]}"
    timer = threading.Timer(remaining, session.interruptTag, args=(tag,))
    session.addTag(tag)
    timer.start()
    try:
        return [tuple(row) for row in session.sql(sql).collect()]
    except Exception as error:
        if time.perf_counter() >= deadline:
            raise TimeoutError(f"interrupted after {remaining:.1f}s") from error
        raise
    finally:
        timer.cancel()
        session.removeTag(tag)
