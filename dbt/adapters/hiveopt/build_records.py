"""What the adapter learns from each build, after the optimizer decided: Spark's actual rows next
to the estimates (actual_rows.py) and the build's time into the memory of outcomes (feedback.py).
One object per dbt invocation, free of dbt: it reads the report (report.py), the statistics store
(statistics_service.py) and, on the embedded session, Spark's SQL metrics.

A build is *planned* in the adapter's optimize_sql (which SQL runs, and what to measure) and
*recorded* in its after-build step (the time, the rows).
"""

from __future__ import annotations

import contextlib
import datetime
import threading
import time
from dataclasses import dataclass
from typing import Any

from dbt.adapters.hiveopt.actual_rows import SparkPlan, attach_all, latest_execution_id, read_plans, worst_q_error
from dbt.adapters.hiveopt.feedback import (
    ORIGINAL_FASTER,
    Choice,
    NoGain,
    Outcome,
    choose,
    decision_key,
    rewrite_fingerprint,
    still_no_gain,
)
from dbt.adapters.hiveopt.report import Report
from dbt.adapters.hiveopt.statistics_store import first_line

NOT_MEASURED_AFTER_PASSES = "statistics were gathered in this invocation: the next build measures"

# Builds' actual rows are read together, off the builds' own time: reading one build's (a sweep
# of the session's SQL status store and its plan's text) took 20-80 ms after each build, as much
# as the optimizer before it (TPC-H SF 1, models no rule changed). They are read at the end of the
# invocation, and every READ_EVERY builds before that: Spark keeps the latest 1000 executions
# (spark.sql.ui.retainedExecutions) and a build is a few.
READ_EVERY = 50


def _spark_context(session: bool):
    """The embedded session's SparkContext (None on other connections, or without one)."""
    if not session:
        return None
    from pyspark import SparkContext

    return SparkContext._active_spark_context


def _session():
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()


@dataclass
class Seen:
    """What the memory of decisions keys a model's build on: its SQL and settings (`key`), and the
    size of the tables it reads (`tables`), read when first needed: at once when a memory of the
    same key is to be checked, else after the optimizer has described them (its catalog reads then
    answer, and a mart over views over seeds sends one SHOW TABLE EXTENDED, not two)."""

    key: str
    tables: list[str]
    input_bytes: float | None = None
    measured: bool = False


class BuildRecords:
    """Per build (by dbt's unique_id): the tag of its Spark jobs (actual rows) and the outcome to
    record after it (feedback); the time its build started."""

    def __init__(self, report: Report, statistics, inputs, session: bool, method: str):
        self.report, self.statistics, self.inputs = report, statistics, inputs
        self.session, self.method = session, method
        self._lock = threading.Lock()
        # unique_id -> (job description, label, the session's latest SQL execution before the tag)
        self._tags: dict[str, tuple[str, str, int]] = {}
        self._unread: list[tuple[str, str, int]] = []  # the same, of builds run, not read yet
        self._outcomes: dict[str, tuple[str, Outcome, bool]] = {}  # unique_id -> (table, what ran, exploring)
        self.started: dict[str, float] = {}
        # Whether this thread's Spark jobs carry a build's tag (a py4j call clears it: only then).
        self._thread = threading.local()

    # -- before the build ---------------------------------------------------------------------
    def feedback(
        self, unique_id: str | None, table: str | None, sql: str, result, config, materialization, gathering
    ) -> tuple[Choice | None, dict[str, Any]]:
        """Which SQL a rewritten table or incremental build runs, from what the rewrite gained on
        earlier builds, and what the record says of it; (None, {}) where feedback does not apply."""
        if config.feedback != "explore" or not result.changed or materialization not in ("table", "incremental"):
            return None, {}
        if not unique_id or table is None:
            return None, {}
        rewrite = rewrite_fingerprint(sql, result.sql)
        input_bytes = self.inputs.input_bytes(gathering)
        choice = choose(rewrite, input_bytes, self.statistics.outcomes(table))
        with self._lock:
            self._outcomes[unique_id] = (table, Outcome(choice.variant, rewrite, 0.0, input_bytes, ""), choice.explore)
        return choice, {"ran": choice.variant, "why": choice.why, "rewrite": rewrite, "input_bytes": input_bytes}

    def remembered_no_gain(self, table: str, sql: str, settings: str, tables: list[str]) -> tuple[str | None, Seen]:
        """Whether the optimizer found nothing to gain for this model's SQL before, on inputs of
        about today's size (feedback.still_no_gain): the reason to run it as written without
        reading the catalog for its views, its statistics or running the optimizer, or None.
        Also what `remember_no_gain` keys on after the optimizer ran."""
        seen = Seen(decision_key(sql, settings), tables)
        memory = self.statistics.no_gain(table)
        if memory is None or memory.key != seen.key:
            return None, seen  # nothing to compare sizes with: they are read when remembered
        return still_no_gain(memory, seen.key, self._input_bytes(seen)), seen

    def remember_no_gain(self, table: str, seen: Seen, result) -> None:
        """The optimizer looked, with statistics for everything the model reads, and found nothing
        to gain: remembered for the next builds (a fallback, a warning or absent statistics are not
        a finding)."""
        if not result.rules or result.changed or result.fallback_reason:
            return
        if result.switched_off or result.unchanged_reason or result.warnings:
            return
        used = (result.statistics_used or {}).values()
        if any(isinstance(u, dict) and u.get("precision") == "absent" for u in used):
            return
        input_bytes = self._input_bytes(seen)
        if input_bytes is not None:
            self.statistics.record_no_gain(table, NoGain(seen.key, input_bytes, _now()))

    def remember_kept_original(self, table: str, seen: Seen, why: str) -> None:
        """Feedback measured both SQL texts and kept the original: the next builds of the same SQL,
        settings and optimizer, on inputs within 2x, run it at once, as a model with nothing to
        gain does (feedback keeps its choice until then anyway)."""
        input_bytes = self._input_bytes(seen)
        if input_bytes is not None:
            self.statistics.record_no_gain(table, NoGain(seen.key, input_bytes, _now(), ORIGINAL_FASTER, why))

    def _input_bytes(self, seen: Seen) -> float | None:
        if not seen.measured:
            seen.input_bytes, seen.measured = self._bytes_of(seen.tables), True
        return seen.input_bytes

    def forget_decision(self, table: str) -> None:
        """A rewrite runs for this model now: a remembered decision to run it as written (from
        inputs of another size) must not come back when the inputs do. Written only when there is
        one: a key that matches no build."""
        memory = self.statistics.no_gain(table)
        if memory is not None and memory.key:
            self.statistics.record_no_gain(table, NoGain("", 0.0, _now(), "forgotten"))

    def _bytes_of(self, tables: list[str]) -> float | None:
        """The size on disk of these tables from the invocation's catalog cache, a seed loaded again
        from the same file by its stored statistics (None: one unknown)."""
        if not tables:
            return None
        names = [t.lower() for t in tables]
        sizes = {name: self.statistics.reloaded_size(name) for name in names}
        # A relation the catalog does not know is left out of describe_all.
        infos = self.statistics.describe_all([name for name, size in sizes.items() if size is None])
        for name in names:
            if sizes[name] is None and name in infos:
                sizes[name] = infos[name].size_bytes
        return None if any(size is None for size in sizes.values()) else float(sum(sizes.values()))

    def tag(self, unique_id: str, label: str, materialization: str | None, record: dict) -> str:
        """Tag the statements of the build that follows in this thread, so that its actual rows can
        be read from the session after it. Only models that run a query, on the session, and that
        have a join tree to compare with. Returns what the record says of it."""
        context = _spark_context(self.session)
        self._untag(context)  # a build that failed before its after-build step left its tag
        trees = record.get("join_trees") or {}
        if materialization not in ("table", "incremental") or not (trees.get("chosen") or trees.get("written")):
            return "not measured: no join, or no query (a view)"
        if context is None:
            return f"not available on the {self.method} connection (read from the embedded session's SQL metrics)"
        # The session's latest SQL execution before this build: a read sweeps only the executions
        # since the earliest of its builds' (in a process that ran other invocations, the store
        # holds up to 1000, and sweeping them all took about 200 ms at the end of each invocation).
        try:
            before = latest_execution_id(_session())
        except Exception:  # a read from -1 sweeps every execution Spark keeps: slower, not wrong
            before = -1
        description = f"hiveopt build {label} {time.perf_counter_ns()}"
        context.setLocalProperty("spark.job.description", description)
        self._thread.tagged = True
        with self._lock:
            self._tags[unique_id] = (description, label, before)
        return "to be read at the end of the dbt invocation"

    def _untag(self, context) -> None:
        if context is not None and getattr(self._thread, "tagged", False):
            context.setLocalProperty("spark.job.description", None)
            self._thread.tagged = False

    def build_starts(self, unique_id: str) -> None:
        with self._lock:
            self.started[unique_id] = time.perf_counter()

    # -- after the build ----------------------------------------------------------------------
    def actual_rows(self, unique_id: str) -> bool:
        """The build just ran: its actual rows are to be read (with the others', `read_actual_rows`).
        True when enough builds wait for a read that one is due (the caller runs it off the
        builds' threads: a read of 50 TPC-DS builds took 1.9 s, which the 50th build's model paid)."""
        context = _spark_context(self.session)
        self._untag(context)
        with self._lock:
            tagged = self._tags.pop(unique_id, None)
            if context is None or tagged is None:
                return False
            self._unread.append(tagged)
            return len(self._unread) >= READ_EVERY

    def read_actual_rows(self) -> str | None:
        """Spark's row counts of the builds run since the last read, next to the estimates of each
        model's join tree, into their records. Returns what it read, for the debug log."""
        with self._lock:
            unread, self._unread = self._unread, []
        if not unread:
            return None
        started = time.perf_counter()
        spark = _session()
        since = min(before for _, _, before in unread)
        window = max(latest_execution_id(spark) - since, 1)
        plans = read_plans(spark, [description for description, _, _ in unread], window)
        for description, label, _ in unread:
            try:
                self._attach(label, plans.get(description))
            except Exception as error:  # one record's trouble: the others are still read
                with contextlib.suppress(Exception):  # the record says so, if it can be written
                    self.report.update(label, {"actual_rows": f"not read ({first_line(error)})"})
        seconds = time.perf_counter() - started
        return f"actual rows of {len(unread)} builds read in {seconds:.2f}s ({window} executions swept)"

    def _attach(self, label: str, plan: SparkPlan | None) -> None:
        record = self.report.read(label)
        if record is None:
            return
        if plan is None:
            self.report.update(label, {"actual_rows": "not found in the session's SQL status store"})
            return
        trees = record.get("join_trees") or {}
        views = {
            name: entry["over"]
            for name, entry in (record.get("statistics_gathering") or {}).items()
            if isinstance(entry, dict) and entry.get("over")
        }
        ran_original = (record.get("feedback") or {}).get("ran") == "original"
        measured = (trees.get("written") if ran_original else trees.get("chosen")) or trees.get("written") or {}
        attach_all(measured, plan, views)
        self.report.update(
            label, {"join_trees": trees, "worst_q_error": worst_q_error(measured), "actual_rows": "measured by Spark"}
        )

    def outcome(self, unique_id: str, label: str) -> None:
        """The build just run, timed: the record says how long it took, or why it was not
        measured; an exploring build's time goes into the memory of outcomes. A build that ran
        the variant already kept leaves the memory as it is: the decision holds until the rewrite
        or the inputs' size changes (re-timing the kept variant against the other's one old time
        made close pairs flip from build to build on run-to-run noise: TPC-H q07, q08 and q09 at
        SF 1 alternated between their two SQL texts in four rounds)."""
        with self._lock:
            planned = self._outcomes.pop(unique_id, None)
            started = self.started.get(unique_id)
        if planned is None or started is None:
            return
        table, outcome, exploring = planned
        seconds = time.perf_counter() - started
        said = dict((self.report.read(label) or {}).get("feedback") or {})
        if not exploring:
            said["seconds"] = round(seconds, 3)
        elif self.statistics.passes:
            # Statistics passes ran in this invocation (first reads): the build's time would stand
            # for a day that does not come back.
            said["not_measured"] = NOT_MEASURED_AFTER_PASSES
        else:
            built_at = _now()
            self.statistics.record_outcome(
                table, Outcome(outcome.variant, outcome.rewrite, seconds, outcome.input_bytes, built_at)
            )
            said["seconds"] = round(seconds, 3)
        self.report.update(label, {"feedback": said})


def _now() -> str:
    """UTC now, to the second, as the store's memories are dated."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
