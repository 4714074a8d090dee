"""The hiveopt adapter: dbt-spark's adapter plus three `@available` methods the macros call.

- optimize_sql: statistics in (gathered when absent or stale), optimizer run, report written,
  optional verify; returns the SQL Spark runs. Never raises for an optimizer problem: it warns
  once and returns the original SQL.
- hiveopt_after_build: gathers statistics of a table or incremental model just built.
- hiveopt_analyze: gathers statistics on demand (run-operation / `hiveopt analyze`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from dbt.adapters.base.meta import available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt.adapters.spark.impl import SparkAdapter
from sqlglot import exp

from dbt.adapters.hiveopt.build_records import BuildRecords
from dbt.adapters.hiveopt.connections import (
    MODEL_BUILDING_COMMANDS,
    SIZES_KEPT_ON_INSERT,
    HiveoptConnectionManager,
    HiveoptConnectionMethod,
    ServerTaskSlots,
    dbt_command,
    session_broadcast_threshold,
    session_task_slots,
)
from dbt.adapters.hiveopt.feedback import ORIGINAL_FASTER, Choice
from dbt.adapters.hiveopt.html_report import write_index
from dbt.adapters.hiveopt.kept_statistics import DEFAULT_KEEP_WITHIN_SIZE
from dbt.adapters.hiveopt.model_inputs import (  # noqa: F401 (fuzz/ imports fetch_small_side_values here)
    BEHIND_STATE,
    FIRST_PASS_BEHIND,
    InputGatherer,
    fetch_small_side_values,
)
from dbt.adapters.hiveopt.optimizer import (
    RULE_NAMES,
    OptimizerConfig,
    OptimizerContext,
    UnsupportedQuery,
    needs_statistics,
    optimize,
    parse_query,
)
from dbt.adapters.hiveopt.optimizer.config import ConfigError, stats_settings
from dbt.adapters.hiveopt.optimizer.pipeline import (
    NOTHING_TO_REWRITE,
    NOTHING_TO_REWRITE_IN_A_VIEW,
    STORED_DEFINITIONS,
    pass_through,
    weighs_task_slots,
)
from dbt.adapters.hiveopt.optimizer.single_relation import reads_one_relation
from dbt.adapters.hiveopt.project_graph import (
    own_table,
    read_by_models,
    relation_name,
    seed_file,
    tables_read,
    with_tables_named_in_code,
)
from dbt.adapters.hiveopt.report import Report, RunSummary, current_invocation, model_label
from dbt.adapters.hiveopt.statistics_gathering import DEFAULT_SAMPLE_ABOVE_ROWS
from dbt.adapters.hiveopt.statistics_service import StatisticsService
from dbt.adapters.hiveopt.statistics_store import DEFAULT_STATS_SCHEMA, first_line
from dbt.adapters.hiveopt.verify import verify_within

logger = AdapterLogger("hiveopt")

SERVER_SLOTS = "the server's cluster (its executors' cores)"
SLOTS_NOT_ASKED = "not asked of the server's cluster: no rule of this model weighs a hot key's share"

# dbt's unit test materialization creates an empty table from `select * from (<model>) where false
# limit 0` for the model's column types, and runs the test's own query itself, not through us:
# there are no rows to gain on (the optimizer took 80-170 ms of a 0.3-0.5 s unit test).
UNIT_TEST_COLUMN_TYPES = "a unit test's column-types table (no rows)"
# `dbt run --empty`: every ref and source reads no rows, so no plan choice matters.
EMPTY_BUILD = "an --empty build (it reads no rows)"


SEED_ROWS_HELD = "counted from the rows dbt loaded when a model first reads them, or behind the build"

# How long a save behind the build waits for other builds' statistics to share it.
SAVE_BEHIND_AFTER_SECONDS = 1.0
# How long a save behind the build waits to learn whether a first statistics pass is to come.
FIRST_PASS_WAIT_SECONDS = 10.0
# How long the end of an invocation waits for a first statistics pass behind the builds.
FIRST_PASS_BEHIND_WAIT_SECONDS = 600.0
# How long it waits for each other thread beside the builds (a store read, a save, a rows read).
THREAD_AT_END_WAIT_SECONDS = 120.0

_FETCHING = ("select", "describe", "show", "with", "values", "(")


class HiveoptAdapter(SparkAdapter):
    ConnectionManager = HiveoptConnectionManager

    def __init__(self, config, mp_context=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(config, mp_context)
        self._hiveopt_lock = threading.Lock()
        self._inputs: InputGatherer | None = None
        self._summary = RunSummary()
        self._records: BuildRecords | None = None
        self._store_reader: threading.Thread | None = None
        self._saver: threading.Thread | None = None
        self._rows_reader: threading.Thread | None = None
        self._first_passer: threading.Thread | None = None  # stats.first_pass: behind
        self._cleaned = False  # dbt calls cleanup_connections up to three times an invocation
        self._save_now = threading.Event()  # set at the end of the invocation: the saver waits no more
        # Set when dbt starts the first node that reaches the adapter (the run's hooks are done):
        # the read-ahead describes the sources after it.
        self._first_node = threading.Event()
        self._graphs: tuple[Any, dict[str, Any]] | None = None  # dbt's graph, and with the tables named in code
        self._server_slots = ServerTaskSlots()  # a server's, read from its cluster once
        self._slots_of_session: int | None = None  # the embedded session's cores, read once
        self._sizes_kept: set[str] = set()  # seeds loading with the size kept (Thrift, Connect)

    @classmethod
    def type(cls) -> str:
        return "hiveopt"

    # -- settings -----------------------------------------------------------------------------
    def _optimizer_block(self, session: bool = True) -> dict[str, Any]:
        """The profile's optimizer settings; with `session`, and on an embedded session, its cores
        and its broadcast line where the profile does not set them (a server's cluster is asked
        for its cores later, when a model needs them; its broadcast line is configured)."""
        block = dict(getattr(self.config.credentials, "optimizer", None) or {})
        if session and self.config.credentials.method == SparkConnectionMethod.SESSION:
            if "task_slots" not in block and self._session_slots():
                block["task_slots"] = self._session_slots()
            # Read each time (one py4j call): a model's pre-hook may SET it.
            threshold = session_broadcast_threshold()
            if "spark_broadcast_threshold_bytes" not in block and threshold is not None:
                block["spark_broadcast_threshold_bytes"] = threshold
        return block

    def _session_slots(self) -> int | None:
        """The embedded session's cores (local[N]), read once: they do not change."""
        if self._slots_of_session is None:
            self._slots_of_session = session_task_slots()
        return self._slots_of_session

    def _task_slots_from(self, model_config: dict[str, Any] | None) -> str:
        """Where a model's task_slots come from: its own config, the profile, the embedded
        session's cores, or (Thrift, Connect) the server's cluster, asked only when a rule needs it."""
        if "task_slots" in (model_config or {}):
            return "the model's config"
        if "task_slots" in (getattr(self.config.credentials, "optimizer", None) or {}):
            return "the profile"
        if self.config.credentials.method == SparkConnectionMethod.SESSION:
            return "the embedded session (its cores)" if self._session_slots() else "the default"
        if self.config.credentials.method in (SparkConnectionMethod.THRIFT, HiveoptConnectionMethod.CONNECT):
            return SERVER_SLOTS
        return "the default"

    def _stats_settings(self) -> dict[str, Any]:
        return stats_settings(self._optimizer_block(session=False))

    def _run_sql(self, sql: str) -> list[tuple]:
        fetch = sql.lstrip().lower().startswith(_FETCHING)
        started = time.perf_counter()
        _, table = self.execute(sql, fetch=fetch)
        logger.debug(f"I/O {time.perf_counter() - started:.3f}s: {sql[:120]}")
        return [tuple(row.values()) for row in table.rows] if fetch else []

    @property
    def statistics(self) -> StatisticsService:
        return self.inputs.statistics

    @property
    def inputs(self) -> InputGatherer:
        """Catalog, statistics and value fetches for this invocation (one cache for all threads)."""
        with self._hiveopt_lock:
            if self._inputs is None:
                settings = self._stats_settings()
                service = StatisticsService(
                    self._run_sql,
                    stats_schema=str(settings.get("schema", DEFAULT_STATS_SCHEMA)),
                    heavy_hitters=int(settings.get("heavy_hitters", 10)),
                    buckets=int(settings.get("histogram_buckets", 32)),
                    warn=lambda message: logger.warning(f"hiveopt: {message}"),
                    sample_above_rows=int(settings.get("sample_above_rows", DEFAULT_SAMPLE_ABOVE_ROWS)),
                    keep_within_size=float(settings.get("keep_within_size", DEFAULT_KEEP_WITHIN_SIZE)),
                    defer_saves=True,  # saved at the end of the invocation (cleanup_connections)
                )
                behind = self._start_first_pass if settings.get("first_pass") == "behind" else None
                self._inputs = InputGatherer(
                    service,
                    self._run_bounded,
                    debug=logger.debug,
                    run_behind=behind,
                    auto_gather=bool(settings.get("auto_gather", True)),
                )
            return self._inputs

    def _report(self) -> Report:
        return Report.for_project(self.config)

    @property
    def records(self) -> BuildRecords:
        """What each build of this invocation teaches: actual rows, and its time for feedback."""
        inputs = self.inputs
        with self._hiveopt_lock:
            if self._records is None:
                method = getattr(self.config.credentials, "method", "this")
                session = method == SparkConnectionMethod.SESSION
                self._records = BuildRecords(self._report(), inputs.statistics, inputs, session, str(method))
        return self._records

    # -- the model path -----------------------------------------------------------------------
    @available
    def optimize_sql(
        self,
        sql: str,
        relation: Any = None,
        model: dict[str, Any] | None = None,
        model_config: dict[str, Any] | None = None,
        materialization: str | None = None,
        temporary: bool = False,
        graph: dict[str, Any] | None = None,
        selected: list[str] | None = None,
    ) -> str:
        """The SQL Spark runs for the model: optimized, or as written (with the reason recorded).
        `graph`: dbt's, whose models' code says which columns statistics passes should read;
        `selected`: dbt's selected_resources, the nodes this invocation builds."""
        entered = time.perf_counter()
        self._first_node.set()
        label = model_label(model, relation)
        graph = self._project_graph(graph)
        self.inputs.read_project(graph, selected)
        if relation is not None and getattr(relation, "schema", None) and getattr(relation, "identifier", None):
            # Built now: what this invocation's catalog cache says of it no longer holds.
            self.inputs.forget(f"{relation.schema}.{relation.identifier}")
        config = self._model_config(label, sql, model_config, materialization)
        if config is None:
            return sql
        slots_from = self._task_slots_from((model_config or {}) if isinstance(model_config, dict) else {})
        try:
            remembered, seen = self._no_gain_before(sql, config, materialization, model, graph)
            if remembered is not None:
                result, gathering, slots_asked = pass_through(sql, remembered), {}, False
            else:
                unique_id = (model or {}).get("unique_id")

                def under() -> list[str]:  # a walk of dbt's graph: only for a model that reads I/O
                    if seen is not None:  # the memory of decisions walked it already
                        return seen.tables
                    return tables_read(graph, unique_id) if graph and unique_id else []

                result, gathering, slots_asked = self._optimize(
                    sql, label, config, materialization or "table", own_table(model), slots_from == SERVER_SLOTS, under
                )
                if seen is not None:
                    table = str(own_table(model))
                    self._update_memory(label, lambda: self.records.remember_no_gain(table, seen, result))
        except Exception as error:  # the run never fails because of the optimizer
            reason = f"optimizer failed ({first_line(error)})"
            logger.warning(f"{label}: {reason}; running the model as written")
            # The record tells what ran: the SQL as written, and why.
            self._report().write_fallback(label, sql, reason, materialization)
            self._summary.add(label, "fell back", "optimizer failed")
            return sql
        record = result.to_dict()
        record.update(
            model=label,
            materialization=materialization,
            temporary=bool(temporary),
            statistics_gathering=gathering,
            setting_problems=config.problems,
            task_slots=self._slots_record(config, slots_from, slots_asked),
        )
        return self._hand_over(sql, result, record, config, model, entered, seen)

    def _slots_record(self, config: OptimizerConfig, slots_from: str, asked: bool) -> dict[str, Any]:
        """The record's task_slots: their value and where it came from; a server's cluster that no
        rule of the model needed was not asked (value None), whatever other models asked."""
        if slots_from != SERVER_SLOTS:
            return {"value": config.task_slots, "from": slots_from}
        if not asked:
            return {"value": None, "from": SLOTS_NOT_ASKED}
        return {"value": config.task_slots, "from": SERVER_SLOTS if self._server_slots.known else "the default"}

    def _server_slots_for(self, config: OptimizerConfig, inputs) -> bool:
        """A server's task slots into the model's config when its skew split weighs a hot key's
        share against them (the rules' pure probe says so before they run: 0.6 ms median, 3.4 ms at
        most over the 167 fixture models); whether it did. Asking is a Spark job (0.4-1.3 s on the
        tests' cluster), run once per invocation: later models that weigh get the value found."""
        context = inputs.context
        if not weighs_task_slots(inputs.prepared.expression, context.schema, context.statistics, config):
            return False
        config.task_slots = self._server_slots.read(self._run_sql, logger.debug) or config.task_slots
        return True

    def _no_gain_before(self, sql: str, config: OptimizerConfig, materialization, model, graph):
        """(reason, seen): a table or incremental model whose SQL the optimizer found nothing to
        gain on before, or whose original feedback kept, on inputs of about today's size, runs as
        written at once (reason); `seen` is what to remember after the optimizer runs (None: no
        memory for this model). With `feedback: explore` only, as the memory of outcomes."""
        table, unique_id = own_table(model), (model or {}).get("unique_id")
        if config.feedback != "explore" or materialization not in ("table", "incremental"):
            return None, None
        if _empty_build():  # its SQL is not the model's: nothing to remember of it
            return None, None
        if not table or not unique_id or not graph or reads_one_relation(sql):
            return None, None
        try:
            return self.records.remembered_no_gain(table, sql, repr(config), tables_read(graph, unique_id))
        except Exception as error:  # the optimizer looks, as without a memory
            logger.debug(f"{model_label(model, None)}: no memory of earlier builds read ({first_line(error)})")
            return None, None

    def _update_memory(self, label: str, work) -> None:
        """Write the memory of decisions (BuildRecords: nothing to gain, a kept original, or that
        a rewrite runs again)."""
        try:
            work()
        except Exception as error:  # a lost memory costs the next build one more look, nothing else
            logger.debug(f"{label}: the memory of decisions not written ({first_line(error)})")

    def _model_config(self, label: str, sql: str, model_config, materialization) -> OptimizerConfig | None:
        """The model's settings over the profile's; None when the model runs as written (bad
        settings, or the optimizer switched off), its record written."""
        report = self._report()
        try:
            config = OptimizerConfig.from_dicts(self._optimizer_block(), model_config or {})
        except ConfigError as error:
            logger.warning(f"{label}: hiveopt settings: {error}; running the model as written")
            report.write_fallback(label, sql, f"settings: {error}", materialization)
            self._summary.add(label, "fell back", "settings error")
            return None
        for problem in config.problems:
            logger.warning(f"{label}: hiveopt setting {problem}; ignored")
        if not config.enabled:
            report.write_fallback(label, sql, "optimizer switched off", materialization, switched_off=True)
            self._summary.add(label, "unchanged", "optimizer switched off")
            return None
        return config

    def _hand_over(
        self, sql: str, result, record: dict, config: OptimizerConfig, model, entered: float, seen=None
    ) -> str:
        """Which SQL runs (feedback), the record, the log lines; the build starts when this returns.
        `seen`: what the memory of decisions keys on (_no_gain_before), to remember a kept original."""
        label, materialization = record["model"], record["materialization"]
        if result.fallback_reason and not result.switched_off:
            logger.warning(f"{label}: not optimized ({result.fallback_reason}); running the model as written")
        for warning in result.warnings:
            logger.warning(f"{label}: {warning}")
        unique_id = (model or {}).get("unique_id")
        gathering = record["statistics_gathering"]
        choice, said = self.records.feedback(
            unique_id, own_table(model), sql, result, config, materialization, gathering
        )
        ran = sql if choice is not None and choice.variant == "original" else result.sql
        if choice is not None:
            record["feedback"] = said
        table = str(own_table(model))
        if seen is not None and choice is not None and choice.variant == "original" and not choice.explore:
            self._update_memory(label, lambda: self.records.remember_kept_original(table, seen, choice.why))
        if seen is not None and ran != sql:  # a rewrite runs: an older memory to run as written no longer holds
            self._update_memory(label, lambda: self.records.forget_decision(table))
        if unique_id:
            try:
                record["actual_rows"] = self.records.tag(unique_id, label, materialization, record)
            except Exception as error:  # the record is best effort: the build goes on
                record["actual_rows"] = f"not measured ({first_line(error)})"
        # What hiveopt added before Spark runs the build: catalog and statistics I/O, the optimizer.
        record["overhead_ms"] = round(1000 * (time.perf_counter() - entered), 1)
        self._report().write(label, ran, record)
        self._summary_of(label, result, choice, record)
        if result.changed and ran == result.sql:
            logger.info(f"{label}: {', '.join(result.fired_rules)} ({result.elapsed_ms:.0f} ms)")
            logger.debug(f"{label}: decisions {record['rules']}")
            if config.verify:
                self._verify(sql, result.sql, label, config)
        elif choice is not None:
            logger.info(f"{label}: runs as written ({choice.why})")
        if unique_id:
            self.records.build_starts(unique_id)  # the statistics cost is compared with the build alone
        return ran

    def _summary_of(self, label: str, result, choice: Choice | None, record: dict) -> None:
        if choice is not None and choice.variant == "original":
            why = "feedback: measuring the original" if choice.explore else ORIGINAL_FASTER
            self._summary.add(label, "unchanged", why)
        elif not (result.changed or result.fallback_reason or result.switched_off) and any(
            isinstance(g, dict) and g.get("state") == BEHIND_STATE for g in record["statistics_gathering"].values()
        ):
            self._summary.add(label, "unchanged", "statistics being gathered behind the builds")
        else:
            self._summary.add_result(label, result)

    def _optimize(
        self,
        sql: str,
        label: str,
        config: OptimizerConfig,
        materialization: str,
        own_table: str | None = None,
        ask_task_slots: bool = False,
        read_through: Callable[[], list[str]] | None = None,
    ):
        """From the SQL alone first: a model no enabled rule could rewrite (no join, no subquery)
        costs no I/O and runs as written. Otherwise its inputs (catalog, statistics, fetched
        values, a server's task slots when the skew split needs them), then the pure optimizer.
        `read_through`: the tables dbt's graph says the model reads, through its views (described
        with what it reads), asked once the model is known to need them. Returns the result, the
        statistics gathered, and whether the server's slots were asked."""
        if not any(config.rule_enabled(name) for name in RULE_NAMES):
            return optimize(sql, OptimizerContext(config=config, model=label)), {}, False
        if materialization == "unit":
            return pass_through(sql, UNIT_TEST_COLUMN_TYPES), {}, False
        if _empty_build():
            return pass_through(sql, EMPTY_BUILD), {}, False
        if reads_one_relation(sql):  # from its tokens: no parse either
            return pass_through(sql, NOTHING_TO_REWRITE), {}, False
        try:
            parsed = parse_query(sql)
        except UnsupportedQuery as error:
            return optimize(sql, OptimizerContext(config=config, model=label)), {"skipped": str(error)}, False
        if not needs_statistics(parsed, config, materialization):
            view_join = materialization in STORED_DEFINITIONS and parsed.find(exp.Join) is not None
            return pass_through(sql, NOTHING_TO_REWRITE_IN_A_VIEW if view_join else NOTHING_TO_REWRITE), {}, False
        if not bool(self._stats_settings().get("auto_gather", True)):
            auto, why_not = False, "automatic gathering is off"
        elif materialization in STORED_DEFINITIONS:
            # Creating a view runs no query: a statistics pass here would be paid before anything
            # reads the view (customer_orders waited 3.9 s for passes over its sources to build in
            # 0.2 s). Statistics at hand are used; the models that read the view gather them.
            auto, why_not = False, "not gathered for a view model (the models that read it gather them)"
        else:
            auto, why_not = True, ""
        inputs = self.inputs.gather(
            sql,
            parsed,
            config,
            label,
            materialization,
            auto_gather=auto,
            why_not=why_not,
            own_table=own_table,
            read_through=read_through() if read_through is not None else [],
        )
        asked = ask_task_slots and inputs.prepared is not None and self._server_slots_for(config, inputs)
        # one parse and one qualification per model
        return optimize(sql, inputs.context, inputs.prepared), inputs.gathering, asked

    def _run_bounded(self, sql: str, deadline: float) -> list[tuple]:
        """A statement on this thread's connection, cancelled on Spark at the deadline (raises
        TimeoutError): session, Thrift and Connect each cancel their own way
        (bounded_statements.py, spark_connect.py). ODBC cannot: no fetch there."""
        handle = self.connections.get_thread_connection().handle
        run = getattr(handle, "run_bounded", None)
        if run is None:
            method = getattr(self.config.credentials, "method", "this")
            raise RuntimeError(f"the {method} connection cannot cancel a statement at a deadline")
        started = time.perf_counter()
        try:
            return run(sql, deadline)
        finally:
            logger.debug(f"I/O {time.perf_counter() - started:.3f}s (bounded): {sql[:120]}")

    def _verify(self, sql: str, optimized: str, label: str, config: OptimizerConfig) -> None:
        """verify mode: original and optimized compared on Spark within verify_timeout_seconds
        (ODBC cannot cancel a statement: there it runs unbounded)."""
        bounded = hasattr(self.connections.get_thread_connection().handle, "run_bounded")
        run_bounded = self._run_bounded if bounded else None
        verify_within(run_bounded, self._run_sql, sql, optimized, label, config.verify_timeout_seconds, logger.warning)

    def cleanup_connections(self) -> None:
        """dbt calls this at the end of an invocation (its task, then its adapter management, and
        the next invocation in the same process once more, dbt-core 1.11): the first call waits
        for the threads beside the builds and writes the optimizer's one closing line; every call
        closes dbt's connections."""
        with self._hiveopt_lock:
            first, self._cleaned = not self._cleaned, True
        if first:
            try:
                self._close_invocation()
            except Exception as error:  # hiveopt's bookkeeping: never dbt's failure
                logger.warning(f"hiveopt: the invocation's end not recorded ({first_line(error)})")
        super().cleanup_connections()

    def _close_invocation(self) -> None:
        self._save_now.set()
        self._first_node.set()  # a read-ahead still waiting for a first node reads nothing more
        for thread in (self._store_reader, self._saver, self._rows_reader):
            _join(thread, THREAD_AT_END_WAIT_SECONDS)
        self._record_pass_behind()
        if self._records is not None:
            self._read_rows()
        line = self._summary.line()
        if line:
            logger.info(line)
        try:  # the page a user opens: target/hiveopt/index.html
            write_index(self._report().folder, current_invocation())
        except Exception as error:
            logger.debug(f"hiveopt: report page not written ({first_line(error)})")
        self._save_statistics()

    def _save_statistics(self) -> None:
        """Store what this invocation gathered, in one save (the service warns if it fails)."""
        if self._inputs is None or not self._inputs.statistics.pending:
            return
        try:
            with self.connection_named("hiveopt-statistics"):
                self._inputs.statistics.flush()
        except Exception as error:
            logger.warning(f"hiveopt: statistics not saved ({first_line(error)}): they were used for this run only")

    @available
    def hiveopt_before_build(self, model: dict[str, Any] | None = None, graph: dict[str, Any] | None = None) -> str:
        """A build that does not pass through optimize_sql (a seed) starts now: its statistics
        cost is compared with the build's time."""
        self._first_node.set()
        if model and model.get("unique_id"):
            self.records.build_starts(model["unique_id"])
            self._keep_sizes_while_loading(model, self._project_graph(graph))
        return ""

    def _keep_sizes_while_loading(self, model: dict[str, Any], graph: dict[str, Any] | None) -> None:
        """On Thrift and Connect each connection is a Spark session of its own, with Spark's default:
        a seed's INSERT keeps no size in the catalog, and the fingerprint of statistics counted
        from a new seed file then cost a DESCRIBE, an ANALYZE ... NOSCAN and a DESCRIBE again
        (0.3-1.9 s in the first mart that read the example project's two seeds over Thrift). Such
        a seed's own connection keeps the size while it loads (`SET`: 5 ms over Thrift idle,
        50-110 ms as the connection's first statement beside three building threads); `RESET`
        after it. A seed loaded again from the file its stored statistics were counted from needs
        no size (`StatisticsService._with_reloaded_size`), and the embedded session, shared by
        every thread, never sets it (connections.SIZES_KEPT_ON_INSERT)."""
        method = self.config.credentials.method
        if method not in (SparkConnectionMethod.THRIFT, HiveoptConnectionMethod.CONNECT):
            return
        unique_id, name = model["unique_id"], relation_name(model)
        try:
            if name and self._inputs is not None and self._inputs.statistics.counted_from(name, seed_file(model)):
                return
            if not OptimizerConfig.from_dicts(self._optimizer_block(session=False)).enabled:
                return
            settings = self._stats_settings()
            if not bool(settings.get("auto_gather", True)):
                return
            if graph and not settings.get("gather_unread_models", False) and not read_by_models(graph, unique_id):
                return  # no statistics are counted for a seed no model reads (_after_build)
            self._run_sql(f"SET {SIZES_KEPT_ON_INSERT}=true")
            self._sizes_kept.add(unique_id)
        except Exception as error:  # the statistics' fingerprint pays its ANALYZE as before
            logger.debug(f"hiveopt: the seed's size not kept on its load ({first_line(error)})")

    def _sizes_back(self, unique_id: str) -> None:
        """The seed's connection back to the server's setting (`_keep_sizes_while_loading`)."""
        if unique_id not in self._sizes_kept:
            return
        self._sizes_kept.discard(unique_id)
        try:
            self._run_sql(f"RESET {SIZES_KEPT_ON_INSERT}")
        except Exception as error:  # the connection keeps sizes on its INSERTs: results are the same
            logger.debug(f"hiveopt: {SIZES_KEPT_ON_INSERT} not reset ({first_line(error)})")

    @available
    def hiveopt_after_build(
        self,
        relations: Any,
        model: dict[str, Any] | None = None,
        model_config: dict[str, Any] | None = None,
        graph: dict[str, Any] | None = None,
        loaded: Any = None,
    ) -> str:
        """Gather statistics of what a table/incremental model just built (Hive's stats autogather),
        when another model of the project reads it: a model nothing reads would pay a Spark job
        for statistics no build uses. Whatever reads it later gathers them on first read, as for
        a source (`stats.gather_unread_models: true` gathers after every build). A seed passes
        the rows dbt loaded (`loaded`, an agate table): its statistics are counted from them.
        What was gathered is then saved behind the build (`_save_behind`)."""
        self._sizes_back((model or {}).get("unique_id", ""))
        self._after_build(relations, model, model_config, self._project_graph(graph), loaded)
        self._save_behind()
        return ""

    def _project_graph(self, graph: dict[str, Any] | None) -> dict[str, Any] | None:
        """dbt's graph with the tables its models name in their code (`db.table`, not through
        ref() or source()) as what they read (project_graph.with_tables_named_in_code), worked
        out once per graph (dbt hands every model the same one; 57 ms for 99 TPC-DS models)."""
        if not graph:
            return graph
        known = self._graphs
        if known is not None and known[0] is graph:
            return known[1]
        try:
            named = with_tables_named_in_code(graph)
        except Exception as error:  # the graph as dbt gave it: only ref() and source() are known
            logger.debug(f"hiveopt: tables named in the models' code not read ({first_line(error)})")
            named = graph
        self._graphs = (graph, named)
        return named

    def _after_build(self, relations, model, model_config, graph, loaded) -> None:
        label = model_label(model, None)
        unique_id = (model or {}).get("unique_id", "")
        try:
            if self.records.actual_rows(unique_id):
                self._read_rows_behind()
        except Exception as error:  # the record is best effort
            logger.debug(f"{label}: actual rows not read ({first_line(error)})")
        try:
            self.records.outcome(unique_id, label)
        except Exception as error:  # a lost outcome costs one more exploring build, nothing else
            logger.debug(f"{label}: build outcome not recorded ({first_line(error)})")
        try:
            config = OptimizerConfig.from_dicts(self._optimizer_block(session=False), model_config or {})
            if not config.enabled or not bool(self._stats_settings().get("auto_gather", True)) or _empty_build():
                return
            started = self.records.started.pop(unique_id, None)
            build_seconds = time.perf_counter() - started if started else None
            if (
                not self._stats_settings().get("gather_unread_models", False)
                and graph
                and not read_by_models(graph, unique_id)
            ):
                for relation in relations or []:
                    self._report().add_gathering_deferred(
                        label,
                        f"{relation.schema}.{relation.identifier}".lower(),
                        "no model of the project reads it: statistics are gathered when something first does",
                    )
                return
            # Models will read this relation: they need the statistics store, read now in the
            # background (0.2-0.5 s) rather than on the first such model's path.
            self._read_store_ahead()
            for relation in relations or []:
                name = f"{relation.schema}.{relation.identifier}".lower()
                began = time.perf_counter()
                if loaded is not None:
                    # Counted, and described for their fingerprint (over a server with an
                    # ANALYZE ... NOSCAN too), when a model first reads them or behind the build.
                    self.statistics.hold_rows(name, loaded.rows, seed_file(model))
                else:
                    self.statistics.describe(name, refresh=True)
                    self.statistics.gather(name)
                seconds = time.perf_counter() - began
                ratio = seconds / build_seconds if build_seconds else None
                how = SEED_ROWS_HELD if loaded is not None else None
                self._report().add_gathering(label, name, seconds, build_seconds, ratio, how)
                logger.debug(f"{label}: statistics of {name} in {seconds:.2f}s (build {build_seconds}s)")
        except Exception as error:
            logger.warning(f"{label}: statistics not gathered ({first_line(error)})")

    def _save_behind(self) -> None:
        """Store the statistics gathered so far on a thread of its own while the build goes on
        (a seed's, loaded again by every `dbt build`, or a first pass's): saved at the end of the
        invocation, the save (a Spark write job, 0.3-0.7 s) added that much to every build's wall
        time after its last model. It waits a moment first, so that builds ending together (seeds
        load side by side) share one save; one save at a time, and what comes meanwhile waits for
        the next, or for the end of the invocation."""
        if self._inputs is None or not self._inputs.statistics.pending:
            return
        self._start_thread("hiveopt-save", self._save_soon, "statistics not saved behind the build", slot="_saver")

    def _read_rows_behind(self) -> None:
        """Read the actual rows of the builds run so far on a thread of its own (one at a time;
        builds that end meanwhile wait for the next read, or for the end of the invocation)."""
        self._start_thread("hiveopt-rows", self._read_rows, slot="_rows_reader")

    def _read_rows(self) -> None:
        try:
            said = self.records.read_actual_rows()
            if said:
                logger.debug(f"hiveopt: {said}")
        except Exception as error:  # the records are best effort
            logger.debug(f"hiveopt: actual rows not read ({first_line(error)})")

    def _save_soon(self) -> None:
        self._save_now.wait(SAVE_BEHIND_AFTER_SECONDS)
        # Seeds' rows counted now, before waiting for the first pass: their fingerprint's catalog
        # reads (SHOW TABLE EXTENDED, DESCRIBE, and on the session an ANALYZE ... NOSCAN: no
        # Spark job) then run while the staging views build, instead of on the path of the first
        # mart that reads the seeds (revenue_by_nation's first build: 1.3 s of them, after the pass).
        self.statistics.settle_held()
        self._after_first_pass()
        self.statistics.flush()

    def _after_first_pass(self) -> None:
        """In a run or build, wait (until the invocation ends at the latest) for its first
        statistics pass, if one is to come: every model that needs statistics waits for that
        pass, and a save (a write job) beside it took cores from it: in the example project's
        first build (SF 0.1) the seeds' save ran beside the pass, whose row count took 0.77 s and
        aggregate 2.62 s; saved after it, 0.50 s and 2.19 s (one build each). The save then also
        stores the pass's statistics (one write job, not two). Before any model has reached the
        adapter (seeds load first) it is not known whether a pass will come: it waits at most
        FIRST_PASS_WAIT_SECONDS for that."""
        if not _builds_models():
            return
        unknown_until = time.perf_counter() + FIRST_PASS_WAIT_SECONDS
        while True:
            to_come = self.inputs.first_pass_to_come()
            if to_come is False or (to_come is None and time.perf_counter() > unknown_until):
                return
            if self._save_now.wait(0.1):
                return

    def _start_first_pass(self, work, finished) -> None:
        """`stats.first_pass: behind`: the invocation's first statistics pass on a thread (and a
        connection) of its own, while the models go on (InputGatherer._first_pass_behind).
        `finished`: called as the thread ends, also when its connection did not open and the
        pass never ran, so that no model waits for a pass that will not come."""

        def run() -> None:
            try:
                self._on_own_connection(
                    work, "the first statistics pass not run behind the builds", "hiveopt-first-pass"
                )
            finally:
                finished()

        self._start_thread("hiveopt-first-pass", run, slot="_first_passer", once=True)

    def _record_pass_behind(self) -> None:
        """The first pass behind the builds has run: its seconds into the record of the model
        that started it (`hiveopt summary` counts them with statistics)."""
        inputs = self._inputs
        if inputs is None:
            return
        over = inputs.wait_behind(FIRST_PASS_BEHIND_WAIT_SECONDS)
        passer = self._first_passer
        if passer is not None:
            passer.join(timeout=THREAD_AT_END_WAIT_SECONDS if over else 0)  # over: its connection closes
            if passer.is_alive():
                logger.warning(
                    "hiveopt: the first statistics pass behind the builds still runs "
                    f"{FIRST_PASS_BEHIND_WAIT_SECONDS:.0f} s after the last model: its statistics are not "
                    "saved, and the next invocation gathers them"
                )
        if inputs.behind_done is None:
            return
        label, entry = inputs.behind_done
        record = self._report().read(label)
        if record is not None:
            gathering = dict(record.get("statistics_gathering") or {})
            gathering[FIRST_PASS_BEHIND] = entry
            self._report().update(label, {"statistics_gathering": gathering})

    def _read_store_ahead(self) -> None:
        """Read the statistics store on a thread of its own, once per invocation (unless the
        run's start read it already: `set_relations_cache`)."""
        self._read_ahead(self.statistics.load, "statistics store not read ahead")

    def _read_ahead(self, work, failed: str) -> None:
        self._start_thread("hiveopt-ahead", work, failed, slot="_store_reader", once=True)

    def _start_thread(
        self, name: str, work, failed: str | None = None, slot: str | None = None, once: bool = False
    ) -> None:
        """Run `work` on a daemon thread named `name`, beside the builds. `failed` (what did not
        happen if it raised): on a dbt connection of its own of that name, its error logged, not
        raised (whoever needs the work's result does it again, and warns). `slot`: the attribute
        that keeps the thread (cleanup_connections joins it); none starts while the one there is
        alive, or, with `once`, ever again in the invocation."""
        target = work if failed is None else (lambda: self._on_own_connection(work, failed, name))
        with self._hiveopt_lock:
            current = getattr(self, slot) if slot is not None else None
            if current is not None and (once or current.is_alive()):
                return
            thread = threading.Thread(target=target, name=name, daemon=True)
            if slot is not None:
                setattr(self, slot, thread)
            # Started under the lock: a thread not yet started is not alive, and a second build
            # ending meanwhile started a second save that the end of the invocation did not join.
            thread.start()

    def _on_own_connection(self, work, failed: str, name: str) -> None:
        try:
            with self.connection_named(name):
                work()
        except Exception as error:  # the first model that needs it reads it (and warns)
            logger.debug(f"hiveopt: {failed} ({first_line(error)})")

    def set_relations_cache(self, relation_configs, clear: bool = False, required_schemas=None) -> None:
        """dbt fills its relation cache at the start of a run or build, before the first node:
        hiveopt reads, on a thread of its own, the statistics store and, once the first node
        starts, the catalog entries of the sources the project's models may need statistics of
        (InputGatherer.prefetch), while dbt runs its hooks and its first nodes. `dbt compile`,
        `test`, `seed` and the rest read nothing; neither does a project whose models no rule
        could touch."""
        super().set_relations_cache(relation_configs, clear=clear, required_schemas=required_schemas)
        if not _builds_models():
            return
        try:
            graph = self._project_graph(getattr(self.get_macro_resolver(), "flat_graph", None))
            if not graph or not OptimizerConfig.from_dicts(self._optimizer_block(session=False)).enabled:
                return
        except Exception as error:  # the models read what they need themselves
            logger.debug(f"hiveopt: nothing read ahead ({first_line(error)})")
            return
        selected = _selected_resources()
        self._read_ahead(
            lambda: self.inputs.prefetch(graph, self._nodes_started, selected), "sources not described ahead"
        )

    def _nodes_started(self) -> bool:
        """Wait until dbt starts the invocation's first node (its on-run-start hooks are done):
        False if the invocation ends first."""
        self._first_node.wait()
        return not self._save_now.is_set()

    @available
    def hiveopt_analyze(self, relations: list[str], graph: dict[str, Any] | None = None) -> list[str]:
        """Gather statistics now for `db.table` names (a view: the tables it reads); one summary
        line per table. `graph`: dbt's, whose models say which columns of a table they use as
        keys: those are detailed, as in a build's first pass (without it, every number and date)."""
        self.inputs.read_project(self._project_graph(graph))
        lines = self.inputs.analyze(relations)
        self.statistics.flush()  # now: the lines say what was gathered, and it is stored
        return lines


def _join(thread: threading.Thread | None, seconds: float) -> None:
    """Wait up to `seconds` for a thread beside the builds. One still running is named in a
    warning: what it does then comes after dbt's last line, if at all (a daemon thread ends with
    the process)."""
    if thread is None:
        return
    thread.join(timeout=seconds)
    if thread.is_alive():
        logger.warning(f"hiveopt: {thread.name} still runs {seconds:.0f} s after the last model; not waited for")


def _builds_models() -> bool:
    """Whether this invocation is `dbt run` or `dbt build` (compile, test, seed and the rest
    build no model through the optimizer). No flags (a library call): not known, so nothing is
    read or waited for."""
    return dbt_command() in MODEL_BUILDING_COMMANDS


def _selected_resources() -> list[str] | None:
    """The nodes this invocation runs, as dbt's `selected_resources` has them (dbt sets them when
    it builds its queue, before it fills the relation cache); None where dbt has not."""
    try:
        from dbt import selected_resources

        chosen = list(selected_resources.SELECTED_RESOURCES)
    except Exception:  # another dbt layout: the sources of every model, as without a selection
        return None
    return [str(unique_id) for unique_id in chosen] or None


def _empty_build() -> bool:
    """Whether this invocation is `dbt run --empty` / `dbt build --empty`."""
    try:
        from dbt.flags import get_flags

        return bool(getattr(get_flags(), "EMPTY", False))
    except Exception:  # no flags (a library call): a normal build
        return False
