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
from typing import Any, Dict, List, Optional

from dbt.adapters.base.meta import available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter

from dbt.adapters.spark.connections import SparkConnectionMethod

from dbt.adapters.hiveopt.connections import HiveoptConnectionManager, session_task_slots
from dbt.adapters.hiveopt.optimizer import (
    OptimizerConfig,
    OptimizerContext,
    RULE_NAMES,
    StatsCatalog,
    UnsupportedQuery,
    key_columns,
    needs_statistics,
    optimize,
    parse_query,
    physical_tables,
    prepare_query,
)
from dbt.adapters.hiveopt.optimizer.config import ConfigError, stats_settings
from dbt.adapters.hiveopt.optimizer.context import FetchedValues
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.rules.prune_partitions_from_small_side import ValueFetch, plan_value_fetches
from dbt.adapters.hiveopt.report import Report, model_label
from dbt.adapters.hiveopt.statistics_service import DEFAULT_STATS_SCHEMA, StatisticsService, first_line
from dbt.adapters.hiveopt.verify import verify_equal

logger = AdapterLogger("hiveopt")

# Nodes that read a model through ref() and are built from it (tests only read, and cheaply).
_READERS = ("model", "snapshot")


def read_by_models(graph: Dict[str, Any], unique_id: str) -> bool:
    """Whether a model or snapshot of dbt's graph depends on the node `unique_id`.

    >>> graph = {"nodes": {"model.p.b": {"resource_type": "model", "depends_on": {"nodes": ["model.p.a"]}},
    ...                    "test.p.t": {"resource_type": "test", "depends_on": {"nodes": ["model.p.b"]}}}}
    >>> read_by_models(graph, "model.p.a"), read_by_models(graph, "model.p.b")
    (True, False)
    """
    return any(
        node.get("resource_type") in _READERS and unique_id in ((node.get("depends_on") or {}).get("nodes") or ())
        for node in (graph.get("nodes") or {}).values()
    )


def fetch_small_side_values(fetch: ValueFetch, max_values: int, run) -> FetchedValues:
    """Run one small side's key query (and its min/max when the list is longer than max_values)
    with `run(sql) -> rows`; any failure is recorded, and the rule then leaves the join to Spark."""
    started = time.perf_counter()
    try:
        rows = run(fetch.values_query.sql(DIALECT))
        if len(rows) > max_values:
            ((low, high),) = run(fetch.range_query.sql(DIALECT))
            result = FetchedValues(low=low, high=high)
        else:
            result = FetchedValues(values=[row[0] for row in rows])
    except Exception as error:
        first = str(error).splitlines()[0][:200] if str(error) else ""
        result = FetchedValues(error=f"fetch failed ({type(error).__name__}: {first})")
    result.seconds = time.perf_counter() - started
    return result


_FETCHING = ("select", "describe", "show", "with", "values", "(")


class HiveoptAdapter(SparkAdapter):
    ConnectionManager = HiveoptConnectionManager

    def __init__(self, config, mp_context=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(config, mp_context)
        self._hiveopt_lock = threading.Lock()
        self._statistics: Optional[StatisticsService] = None
        self._build_started: Dict[str, float] = {}

    @classmethod
    def type(cls) -> str:
        return "hiveopt"

    # -- settings -----------------------------------------------------------------------------
    def _optimizer_block(self) -> Dict[str, Any]:
        block = dict(getattr(self.config.credentials, "optimizer", None) or {})
        if "task_slots" not in block and self.config.credentials.method == SparkConnectionMethod.SESSION:
            slots = session_task_slots()  # an embedded session knows its cores; a server is configured
            if slots:
                block["task_slots"] = slots
        return block

    def _stats_settings(self) -> Dict[str, Any]:
        return stats_settings(self._optimizer_block())

    def _run_sql(self, sql: str) -> List[tuple]:
        fetch = sql.lstrip().lower().startswith(_FETCHING)
        started = time.perf_counter()
        _, table = self.execute(sql, fetch=fetch)
        logger.debug(f"I/O {time.perf_counter() - started:.3f}s: {sql[:120]}")
        return [tuple(row.values()) for row in table.rows] if fetch else []

    @property
    def statistics(self) -> StatisticsService:
        with self._hiveopt_lock:
            if self._statistics is None:
                settings = self._stats_settings()
                self._statistics = StatisticsService(
                    self._run_sql,
                    stats_schema=str(settings.get("schema", DEFAULT_STATS_SCHEMA)),
                    heavy_hitters=int(settings.get("heavy_hitters", 10)),
                    buckets=int(settings.get("histogram_buckets", 32)),
                    warn=lambda message: logger.warning(f"hiveopt: {message}"),
                )
            return self._statistics

    def _report(self) -> Report:
        return Report.for_project(self.config)

    # -- the model path -----------------------------------------------------------------------
    @available
    def optimize_sql(self, sql: str, relation: Any = None, model: Optional[Dict[str, Any]] = None,
                     model_config: Optional[Dict[str, Any]] = None, materialization: Optional[str] = None,
                     temporary: bool = False) -> str:
        label = model_label(model, relation)
        report = self._report()
        try:
            config = OptimizerConfig.from_dicts(self._optimizer_block(), model_config or {})
        except ConfigError as error:
            logger.warning(f"{label}: hiveopt settings: {error}; running the model as written")
            report.write_fallback(label, sql, f"settings: {error}", materialization)
            return sql
        for problem in config.problems:
            logger.warning(f"{label}: hiveopt setting {problem}; ignored")
        if not config.enabled:
            report.write_fallback(label, sql, "optimizer switched off", materialization, switched_off=True)
            return sql
        try:
            result, gathering = self._optimize(sql, label, config, materialization or "table")
        except Exception as error:  # the run never fails because of the optimizer
            reason = f"optimizer failed ({first_line(error)})"
            logger.warning(f"{label}: {reason}; running the model as written")
            # The record tells what ran: the SQL as written, and why.
            report.write_fallback(label, sql, reason, materialization)
            return sql
        if result.fallback_reason and not result.switched_off:
            logger.warning(f"{label}: not optimized ({result.fallback_reason}); running the model as written")
        for warning in result.warnings:
            logger.warning(f"{label}: {warning}")
        record = result.to_dict()
        record.update(model=label, materialization=materialization, temporary=bool(temporary), statistics_gathering=gathering,
                      setting_problems=config.problems)
        report.write(label, result.sql, record)
        if result.changed:
            fired = ", ".join(result.fired_rules)
            logger.info(f"{label}: {fired} ({result.elapsed_ms:.0f} ms)")
            logger.debug(f"{label}: decisions {record['rules']}")
            if config.verify:
                verify_equal(self._run_sql, sql, result.sql, label)
        if model and model.get("unique_id"):
            # The build proper starts now: the statistics cost is compared with it alone.
            self._build_started[model["unique_id"]] = time.perf_counter()
        return result.sql

    def _optimize(self, sql: str, label: str, config: OptimizerConfig, materialization: str):
        """I/O first (catalog, statistics), then the pure optimizer."""
        if not any(config.rule_enabled(name) for name in RULE_NAMES):
            return optimize(sql, OptimizerContext(config=config, model=label)), {}
        try:
            parsed = parse_query(sql)
        except UnsupportedQuery as error:
            return optimize(sql, OptimizerContext(config=config, model=label)), {"skipped": str(error)}
        tables = physical_tables(parsed)
        service = self.statistics
        schema: Dict[str, Dict[str, Dict[str, str]]] = {}
        bucketing: Dict[str, List[str]] = {}
        partitioning: Dict[str, List[str]] = {}
        for name in tables:
            if "." not in name:
                continue  # temp views and CTE-less bare names: qualify reports the missing schema
            db, table = name.split(".", 1)
            try:
                info = service.describe(name)
            except Exception as error:
                logger.debug(f"{label}: cannot describe {name}: {error}")
                continue
            schema.setdefault(db, {})[table] = dict(info.columns)
            if info.bucket_columns:
                bucketing[name] = list(info.bucket_columns)
            if info.partition_columns:
                partitioning[name] = list(info.partition_columns)
        statistics = StatsCatalog()
        gathering: Dict[str, Any] = {}
        auto = bool(self._stats_settings().get("auto_gather", True))
        try:
            prepared = prepare_query(sql, schema, parsed=parsed)
        except Exception:
            prepared = None  # optimize() prepares it again and reports why; no statistics I/O for it
        if prepared is not None and needs_statistics(prepared.expression, config):
            keys = key_columns(prepared.expression)
            for name in tables:
                db, _, table = name.partition(".")
                if table not in schema.get(db, {}):
                    continue
                try:
                    stats, state, seconds = service.ensure(name, keys.get(name, ()), auto_gather=auto)
                except Exception as error:  # this table's statistics are absent; the rules that need them skip
                    service.warn_once(f"gather:{name}", f"statistics of {name} not gathered ({first_line(error)})")
                    gathering[name] = {"state": f"failed: {first_line(error)}", "seconds": 0.0}
                    continue
                gathering[name] = {"state": state, "seconds": round(seconds, 3)}
                if stats is not None:
                    statistics.put(name, stats)
        fetched: Dict[str, FetchedValues] = {}
        if prepared is not None and config.prune_fetch_values:
            # Partition pruning's pre-pass: the optimizer says which small-side keys to fetch.
            # Without a fetch (prune_fetch_values off) the rule writes semi-join filters where they win.
            fetches = plan_value_fetches(prepared.expression, schema, statistics, config, materialization, partitioning)
            fetched = {fetch.key: self._fetch_values(fetch, config, label) for fetch in fetches}
        context = OptimizerContext(schema=schema, statistics=statistics, config=config, model=label,
                                   materialization=materialization, bucketing=bucketing,
                                   partitioning=partitioning, fetched_values=fetched)
        return optimize(sql, context, prepared), gathering  # one parse and one qualification per model

    def _fetch_values(self, fetch: ValueFetch, config: OptimizerConfig, label: str) -> FetchedValues:
        deadline = time.perf_counter() + config.prune_fetch_timeout_seconds
        result = fetch_small_side_values(fetch, config.prune_max_values, lambda sql: self._run_bounded(sql, deadline))
        logger.debug(f"{label}: fetched small-side keys in {result.seconds:.3f}s: {result.error or 'ok'}")
        return result

    def _run_bounded(self, sql: str, deadline: float) -> List[tuple]:
        """A query on the session's SparkSession, cancelled at the deadline (its Spark jobs run in
        a job group a timer cancels). Other connection methods cannot cancel: no fetch there."""
        if getattr(self.config.credentials, "method", None) != SparkConnectionMethod.SESSION:
            raise RuntimeError("a bounded value fetch needs the session method")
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise TimeoutError("no time left")
        context = spark.sparkContext
        group = f"hiveopt-fetch-{threading.get_ident()}-{time.perf_counter_ns()}"
        timer = threading.Timer(remaining, context.cancelJobGroup, args=(group,))
        context.setJobGroup(group, "hiveopt: small-side key values", interruptOnCancel=True)
        timer.start()
        try:
            return [tuple(row) for row in spark.sql(sql).collect()]
        except Exception as error:
            if time.perf_counter() >= deadline:
                raise TimeoutError(f"timed out after {remaining:.1f}s") from error
            raise
        finally:
            timer.cancel()
            context.setLocalProperty("spark.jobGroup.id", None)
            context.setLocalProperty("spark.job.description", None)
            context.setLocalProperty("spark.job.interruptOnCancel", None)

    @available
    def hiveopt_after_build(self, relations: Any, model: Optional[Dict[str, Any]] = None,
                            model_config: Optional[Dict[str, Any]] = None, graph: Optional[Dict[str, Any]] = None) -> str:
        """Gather statistics of what a table/incremental model just built (Hive's stats autogather),
        when another model of the project reads it: a model nothing reads would pay a Spark job
        for statistics no build uses. Whatever reads it later gathers them on first read, as for
        a source (`stats.gather_unread_models: true` gathers after every build)."""
        label = model_label(model, None)
        try:
            config = OptimizerConfig.from_dicts(self._optimizer_block(), model_config or {})
            if not config.enabled or not bool(self._stats_settings().get("auto_gather", True)):
                return ""
            unique_id = (model or {}).get("unique_id", "")
            started = self._build_started.pop(unique_id, None)
            build_seconds = time.perf_counter() - started if started else None
            if not self._stats_settings().get("gather_unread_models", False) and graph and not read_by_models(graph, unique_id):
                for relation in relations or []:
                    self._report().add_gathering_deferred(
                        label, f"{relation.schema}.{relation.identifier}".lower(),
                        "no model of the project reads it: statistics are gathered when something first does")
                return ""
            for relation in relations or []:
                name = f"{relation.schema}.{relation.identifier}".lower()
                self.statistics.describe(name, refresh=True)
                result = self.statistics.gather(name)
                ratio = result.seconds / build_seconds if build_seconds else None
                self._report().add_gathering(label, name, result.seconds, build_seconds, ratio)
                logger.debug(f"{label}: statistics of {name} in {result.seconds:.2f}s (build {build_seconds}s)")
        except Exception as error:
            logger.warning(f"{label}: statistics not gathered ({first_line(error)})")
        return ""

    @available
    def hiveopt_analyze(self, relations: List[str]) -> List[str]:
        """Gather statistics now for `db.table` names; one summary line per table."""
        lines = []
        for name in relations:
            self.statistics.describe(name, refresh=True)
            result = self.statistics.gather(name)
            stats = result.stats
            lines.append(f"hiveopt: analyzed {name}: {int(stats.row_count.value or 0)} rows, "
                         f"{len(stats.columns)} columns in {result.seconds:.2f}s")
        return lines
