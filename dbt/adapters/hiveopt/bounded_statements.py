"""Statements with a deadline, on each connection method: the partition-pruning value fetch and
`verify` run through `handle.run_bounded(sql, deadline) -> rows`, which returns the rows or raises
TimeoutError once `deadline` (a time.perf_counter() value) has passed, having cancelled the work
on Spark. Each method cancels its own way:

- session: the statement's Spark jobs run in a job group of their own, cancelled at the deadline
  and again every CANCEL_AGAIN_SECONDS until the statement returns;
- Thrift (and HTTP): the statement runs asynchronously on a second session of the server (whose
  status calls return quickly), is polled, and its operation is cancelled at the deadline (Spark's
  Thrift server then cancels its job group);
- Connect: an operation tag and an interrupt (spark_connect.run_bounded_on_connect).

dbt-spark's session and PyHive wrappers gain `run_bounded` by subclassing; ODBC has no way to
cancel a statement from its own thread here, so it has none and gets no fetch.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from dbt.adapters.spark.connections import PyhiveConnectionWrapper
from dbt.adapters.spark.session import SessionConnectionWrapper

# The first polls come quickly (a key fetch often takes a fraction of a second), then ease off.
FIRST_POLL_SECONDS = 0.05
MAX_POLL_SECONDS = 0.5
# A session's job group is cancelled again this often after the deadline, until the statement returns.
CANCEL_AGAIN_SECONDS = 0.5


def _remaining(deadline: float) -> float:
    remaining = deadline - time.perf_counter()
    if remaining <= 0:
        raise TimeoutError("no time left")
    return remaining


# What SparkContext.setJobGroup sets on the calling thread.
_JOB_GROUP_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


def run_bounded_on_session(spark: Any, sql: str, deadline: float) -> list[tuple]:
    """On an embedded SparkSession: the statement's jobs run in a job group of their own, which a
    timer cancels at the deadline, and again every CANCEL_AGAIN_SECONDS until the statement
    returns: a cancel finds only the jobs running then, and a statement still being planned at
    the deadline submits its job after it."""
    remaining = _remaining(deadline)
    context = spark.sparkContext
    group = f"hiveopt-bounded-{threading.get_ident()}-{time.perf_counter_ns()}"
    returned = threading.Event()

    def cancel_until_returned() -> None:
        if returned.wait(remaining):
            return
        while not returned.is_set():
            context.cancelJobGroup(group)
            returned.wait(CANCEL_AGAIN_SECONDS)

    canceller = threading.Thread(target=cancel_until_returned, name="hiveopt-cancel", daemon=True)
    # The thread's own job properties, put back after: a build's description (build_records.tag,
    # which finds the build's plan for its actual rows) stays on the build that verify mode runs
    # its bounded statements before.
    kept = {key: context.getLocalProperty(key) for key in _JOB_GROUP_PROPERTIES}
    context.setJobGroup(group, "hiveopt: a bounded statement", interruptOnCancel=True)
    canceller.start()
    try:
        return [tuple(row) for row in spark.sql(sql).collect()]
    except Exception as error:
        if time.perf_counter() >= deadline:
            raise TimeoutError(f"cancelled after {remaining:.1f}s") from error
        raise
    finally:
        returned.set()
        for key, value in kept.items():
            context.setLocalProperty(key, value)


def run_bounded_on_thrift(hive_connection: Any, sql: str, deadline: float) -> list[tuple]:
    """On a PyHive connection: an asynchronous statement on a cursor of its own, polled, and its
    operation cancelled at the deadline. Each poll can take as long as the session's
    hive.server2.long.polling.timeout (BoundedPyhiveWrapper runs this on a session that keeps it
    short)."""
    from dbt_common.exceptions import DbtDatabaseError
    from TCLIService.ttypes import TOperationState

    remaining = _remaining(deadline)
    cursor = hive_connection.cursor()
    try:
        cursor.execute(sql, async_=True)
        pause = FIRST_POLL_SECONDS
        while True:
            status = cursor.poll()
            if status.operationState not in (
                TOperationState.INITIALIZED_STATE,
                TOperationState.PENDING_STATE,
                TOperationState.RUNNING_STATE,
            ):
                break
            if time.perf_counter() >= deadline:
                cursor.cancel()
                raise TimeoutError(f"cancelled after {remaining:.1f}s")
            time.sleep(min(pause, max(deadline - time.perf_counter(), 0.0)))
            pause = min(pause * 2, MAX_POLL_SECONDS)
        if status.errorMessage:
            raise DbtDatabaseError(status.errorMessage)
        if status.operationState != TOperationState.FINISHED_STATE:
            state = TOperationState._VALUES_TO_NAMES.get(status.operationState, status.operationState)
            raise DbtDatabaseError(f"statement ended in state {state}")
        return [tuple(row) for row in cursor.fetchall()]
    finally:
        try:
            cursor.close()
        except Exception:
            pass


class BoundedSessionWrapper(SessionConnectionWrapper):
    def run_bounded(self, sql: str, deadline: float) -> list[tuple]:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        return run_bounded_on_session(spark, sql, deadline)


class BoundedPyhiveWrapper(PyhiveConnectionWrapper):
    """dbt-spark's PyHive wrapper, with bounded statements on a second Thrift session of the same
    server, opened when first needed (`open_sibling() -> a PyHive connection`). HiveServer2 holds
    a status call until the statement ends or hive.server2.long.polling.timeout passes (5 s by
    default): dbt's own statements rely on that (dbt-spark sleeps 5 s between polls), while a
    bounded statement must see its deadline. The sibling session asks for short status calls
    (LONG_POLLING_SETTINGS): a slow fetch polled on it was cancelled 5.1 s after a 2 s deadline on
    the dbt session, 2.0-2.1 s on a sibling."""

    def __init__(self, handle: Any, open_sibling: Any = None, **kwargs: Any) -> None:
        super().__init__(handle, **kwargs)
        self._open_sibling = open_sibling
        self._sibling: Any = None

    def run_bounded(self, sql: str, deadline: float) -> list[tuple]:
        if self._sibling is None:
            self._sibling = self._open_sibling() if self._open_sibling else self.handle
        return run_bounded_on_thrift(self._sibling, sql, deadline)

    def close(self) -> None:
        super().close()
        if self._sibling is not None and self._sibling is not self.handle:
            try:
                self._sibling.close()
            except Exception:
                pass  # the server may be gone: nothing left to close


# HiveServer2 reads a session's configuration entry `set:hiveconf:<key>` into its HiveConf.
LONG_POLLING_SETTINGS = {"set:hiveconf:hive.server2.long.polling.timeout": "100ms"}


def with_bounded_statements(handle: Any, open_sibling: Any = None) -> Any:
    """dbt-spark's wrapper for a connection, as the subclass that can also run bounded statements
    (the same connection: nothing is reopened). Other wrappers are returned as they are."""
    if type(handle) is SessionConnectionWrapper:
        return BoundedSessionWrapper(handle.handle)
    if type(handle) is PyhiveConnectionWrapper:
        return BoundedPyhiveWrapper(
            handle.handle,
            open_sibling=open_sibling,
            poll_interval=handle.poll_interval,
            query_timeout=handle.query_timeout,
            query_retries=handle.query_retries,
        )
    return handle
