"""What the optimizer needs from Spark for one model, gathered in one place: the catalog
(DESCRIBE, cached per invocation), statistics (the store, gathered when absent or stale), views
seen through their definitions, and the partition-pruning pre-pass's key values. Free of dbt:
every statement goes through the StatisticsService's `execute(sql) -> rows` seam and the value
fetch through `run_bounded(sql, deadline) -> rows`, so the adapter's methods stay a few lines.

A view holds no data and gets no statistics of its own: its numbers are derived from its SQL
(the catalog's view text) over the statistics of what it reads, recursively down to tables
(Hive's CBO plans a view as the query it stands for). Nothing about a view is stored: each
invocation derives it from the tables' current statistics, so a view over a rebuilt table gets
fresh estimates.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from dbt.adapters.hiveopt.key_columns import key_words_downstream
from dbt.adapters.hiveopt.optimizer import (
    OptimizerConfig,
    OptimizerContext,
    StatsCatalog,
    TableStats,
    UnsupportedQuery,
    key_columns,
    needs_statistics,
    parse_query,
    physical_tables,
    prepare_query,
    referenced_columns,
    value_fetches,
)
from dbt.adapters.hiveopt.optimizer.context import FetchedValues, ValueFetch
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.prepare import PreparedQuery
from dbt.adapters.hiveopt.optimizer.syntax import deterministic, mark_volatile
from dbt.adapters.hiveopt.optimizer.view_statistics import base_columns, view_statistics
from dbt.adapters.hiveopt.project_graph import read_unbuilt, seed_files, sources_read, words_downstream
from dbt.adapters.hiveopt.statistics_service import StatisticsService
from dbt.adapters.hiveopt.statistics_store import first_line

RunBounded = Callable[[str, float], list[tuple[Any, ...]]]


@functools.lru_cache(maxsize=256)
def _view_reads(view_text: str) -> tuple[tuple[str, ...], bool]:
    """What a view's text reads (prepare.physical_tables) and whether it is deterministic
    (syntax.deterministic): parsed once per text and process, for every model that reads it."""
    parsed = parse_query(view_text)
    return tuple(physical_tables(parsed)), deterministic(parsed)


def _view_database(view: str, info) -> str:
    """The database an unqualified name in a view's text is read from: the one the view was
    created in, as the catalog says (the view's own database when it does not)."""
    return info.view_db or view.split(".", 1)[0]


# Views over views over ...: deeper than this, the view is left without statistics.
MAX_VIEW_DEPTH = 8
# The record's entry for the invocation's first statistics pass (InputGatherer._first_pass).
FIRST_PASS = "(the invocation's first statistics pass)"
# A table's entry in the record of the model that ran that pass.
FIRST_PASS_STATE = "gathered by the invocation's first statistics pass"
# The record's entry for the time a model waited while another model ran that pass: its build
# started that much later, and `hiveopt summary` counts it with statistics, not hiveopt's own time.
FIRST_PASS_WAIT = "(waited for the invocation's first statistics pass)"
# A wait shorter than this is not worth a line in the record.
WAIT_WORTH_SAYING_SECONDS = 0.01
# With `stats.first_pass: behind`: the record's entry, in the model that started the pass, for
# that pass (its seconds are written at the end of the invocation, when it has run: they were not
# that model's, which did not wait), and the state of a table it gathers, in the models that
# started meanwhile and read it without statistics.
FIRST_PASS_BEHIND = "(the invocation's first statistics pass, behind the builds)"
BEHIND_STATE = (
    "no statistics yet: the invocation's first pass gathers them behind the builds (stats.first_pass: behind)"
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


@dataclass(frozen=True)
class _Wanted:
    """What a model reads of a relation: its key columns (joins, filters: detailed with heavy
    hitters and histograms) and every column it uses (a statistics pass reads these)."""

    keys: set[str]
    used: set[str]


@dataclass
class ModelInputs:
    """The optimizer's inputs for one model (see `InputGatherer.gather`)."""

    context: OptimizerContext
    prepared: PreparedQuery | None = None
    # table -> {"state": what happened, "seconds": gathering time}, for the model's record.
    gathering: dict[str, Any] = field(default_factory=dict)


class InputGatherer:
    """Catalog, statistics and fetched values for models, cached for one dbt invocation."""

    def __init__(
        self,
        statistics: StatisticsService,
        run_bounded: RunBounded | None = None,
        debug: Callable[[str], None] = lambda message: None,
        run_behind: Callable[[Callable[[], None], Callable[[], None]], Any] | None = None,
        auto_gather: bool = True,
    ):
        self.statistics = statistics
        self.run_bounded = run_bounded
        self.debug = debug
        # stats.first_pass: behind. Starts work on a thread (and connection) of its own; None:
        # the models wait for the first pass (`wait`, the default).
        self.run_behind = run_behind
        self._project_lock = threading.Lock()
        self._project_read = False
        self._selection_read = False
        # What the invocation's selected models read and it does not build (read_project): the
        # tables they may need statistics of, and the views in between; and the lock the first
        # model that needs statistics holds while one pass gathers them.
        self._first_tables: list[str] = []
        self._unbuilt_views: list[str] = []
        self._first_lock = threading.Lock()
        self._first_done = False
        self._first_gathered: list[str] = []  # what the first pass gathered
        self._first_over = threading.Event()  # the first pass has run, or there is none to run
        if not auto_gather:  # stats.auto_gather: false runs none (the models use the statistics at hand)
            self._first_over.set()
        self._behind: frozenset[str] = frozenset()  # what a pass behind the builds gathers
        # (label of the model that started it, its record's entry) once that pass has run
        self.behind_done: tuple[str, dict[str, Any]] | None = None

    def read_project(self, graph: dict[str, Any] | None, selected: list[str] | None = None) -> None:
        """dbt's graph, once per invocation: the column names the project's models use of each
        relation, which a first statistics pass then reads (project_graph.words_downstream), and,
        with dbt's `selected_resources` (once too), the tables the selected models may need
        statistics of."""
        # Read under the lock: a model (or the read-ahead) that finds the selection read finds
        # the tables of the first pass set.
        with self._project_lock:
            words = not self._project_read and bool(graph)
            chosen = not self._selection_read and bool(graph) and selected is not None
            self._project_read |= words
            self._selection_read |= chosen
            try:
                if words:
                    self.statistics.seed_files = seed_files(graph)
                    self.statistics.project_words = words_downstream(graph)
                    self.statistics.project_keys_from = lambda: key_words_downstream(graph)
                if chosen:
                    self._first_tables, self._unbuilt_views = read_unbuilt(graph, selected or [])
            except Exception as error:  # each pass reads what its model names, as without it
                self.debug(f"hiveopt: the project's column names not read ({first_line(error)})")

    def prefetch(
        self,
        graph: dict[str, Any],
        nodes_started: Callable[[], bool] = lambda: True,
        selected: list[str] | None = None,
    ) -> None:
        """At the start of a run or build: the statistics store, and once dbt starts its first
        node (`nodes_started` waits for it, False: the invocation ended first) what the catalog
        says of the tables the selected models may need statistics of and this invocation does
        not build (one SHOW TABLE EXTENDED per database), so that the first model that needs them
        does not wait for both (0.2-0.3 s on TPC-H's second query, where its build takes 1-2 s).
        Not before the first node: the project's on-run-start hooks may create or load them.
        Nothing is read where no selected model may use statistics. `selected`: dbt's selected
        resources (None: not known, the sources every model of the project may read)."""
        self.read_project(graph, selected)
        tables = sources_read(graph) if selected is None else list(self._first_tables)
        if not tables:
            return
        self.statistics.load()
        if nodes_started():
            self.statistics.describe_all(tables)

    def _first_pass_behind(self, gathering: dict[str, Any], label: str) -> None:
        """`stats.first_pass: behind`: the first model that needs statistics starts the pass over
        the tables that lack them on a thread of its own and goes on at once. Until the pass has
        run, every model reads those tables without statistics (the rules that need them skip,
        and say why): a first build runs as written, as dbt-spark would, instead of waiting for
        the pass (on a new JVM, a first build of the example project that waited took 8-34%
        longer than dbt-spark's, docs/benchmarks.md). The models that start after it, and the next
        invocation, have them. The pass's seconds go into the starting model's record at the end
        of the invocation (`behind_done`)."""
        run_behind = self.run_behind
        with self._first_lock:
            if self._first_done or run_behind is None:
                return
            self._first_done = True
            lacking = [name for name in self._first_tables if self._lacks_statistics(name)]
            if not lacking:
                self._first_over.set()
                return
            self._behind = frozenset(lacking)
        entry: dict[str, Any] = {
            "state": f"started behind this build over the {len(lacking)} tables the selected models read that "
            f"lacked statistics: {', '.join(sorted(lacking))}",
            "seconds": 0.0,
            "behind": True,  # not this model's time: it did not wait
            "tables": sorted(lacking),
        }

        def work() -> None:
            try:
                gathered, seconds = self.statistics.gather_many(lacking)
                self.behind_done = (label, {**entry, "seconds": round(seconds, 3), "tables": sorted(gathered)})
            except Exception as error:  # the next models gather what they read, one table at a time
                self.debug(f"hiveopt: the invocation's first statistics pass failed ({first_line(error)})")
            finally:
                self._first_over.set()

        try:
            run_behind(work, self._first_over.set)  # set as its thread ends, also if the pass never ran
        except Exception as error:  # the models gather what they read themselves, as without it
            self.debug(f"hiveopt: the first statistics pass not started behind the builds ({first_line(error)})")
            self._behind = frozenset()
            self._first_over.set()
            return
        gathering[FIRST_PASS_BEHIND] = entry

    def _lacks_statistics(self, name: str) -> bool:
        try:
            return self.statistics.current(name)[0] is None
        except Exception:  # not described: the pass leaves it out too
            return False

    def _gathered_behind(self, name: str) -> bool:
        """The table is being gathered by a first pass behind the builds, not done yet."""
        return name.lower() in self._behind and not self._first_over.is_set()

    def wait_behind(self, timeout: float) -> bool:
        """Wait for a first pass behind the builds (the end of the invocation); whether none runs now."""
        return self._first_over.wait(timeout) if self._behind else True

    def _first_pass(self, gathering: dict[str, Any]) -> None:
        """Once per invocation, before the first model's statistics: one pass (one Spark job) over
        every table the selected models may need statistics of that has none, or stale ones,
        instead of a job per table as each model first reads it (TPC-H SF 0.1, the example
        project's five sources: 2.7 s of passes one by one on a warm session). The model that
        runs it records the pass; models that need statistics meanwhile wait for it.
        Not run ahead of the models, as dbt starts its first nodes: there it shares the cores
        with the staging models' tests and took twice as long (`make demo`: 17.5 s against 8.2 s
        on the first mart's path) for the same wall time (docs/benchmarks.md, 2026-11-27)."""
        asked = time.perf_counter()
        with self._first_lock:
            if self._first_done:
                waited = time.perf_counter() - asked
                if self._first_gathered and waited >= WAIT_WORTH_SAYING_SECONDS:
                    gathering[FIRST_PASS_WAIT] = {
                        "state": "waited while another model ran the invocation's first statistics pass",
                        "waited_seconds": round(waited, 3),
                        "tables": list(self._first_gathered),
                    }
                return
            self._first_done = True
            if not self._first_tables:
                self._first_over.set()
                return
            try:
                gathered, seconds = self.statistics.gather_many(self._first_tables)
            except Exception as error:  # each model gathers what it reads, one table at a time
                self.debug(f"hiveopt: the invocation's first statistics pass failed ({first_line(error)})")
                return
            finally:
                self._first_over.set()
            if gathered:
                self._first_gathered = sorted(gathered)
                gathering[FIRST_PASS] = {
                    "state": f"one pass over the {len(gathered)} tables the selected models read that lacked "
                    f"statistics: {', '.join(sorted(gathered))}",
                    "seconds": round(seconds, 3),
                    "tables": sorted(gathered),
                }

    def first_pass_to_come(self) -> bool | None:
        """Whether the invocation's first statistics pass is still to run or running (None: not
        known yet, no model has reached the adapter). Not once it has run, or when none is to
        run (`stats.auto_gather: false`: a save behind the builds that waited for it waited until
        the end of the invocation)."""
        if self._first_over.is_set():
            return False
        with self._project_lock:
            if not self._selection_read:
                return None
        return bool(self._first_tables)

    def forget(self, name: str) -> None:
        """The invocation is about to build `name`: what the catalog said of it no longer holds."""
        self.statistics.forget(name)

    def gather(
        self,
        sql: str,
        parsed: exp.Query,
        config: OptimizerConfig,
        label: str,
        materialization: str,
        auto_gather: bool = True,
        why_not: str = "automatic gathering is off",
        own_table: str | None = None,
        read_through: list[str] | None = None,
    ) -> ModelInputs:
        """Describe what the model reads, prepare it, and get statistics for the tables (and the
        views, through their definitions) when an enabled rule could use them. `own_table`, the
        table the model builds, is never gathered here: an incremental model reads it for its
        filter, and a pass over it would be stale once the build writes to it (daily_revenue paid
        2.3 s for one on every incremental run). `read_through`: the tables under its views, as
        dbt's graph has them, described with the views."""
        tables = [name for name in physical_tables(parsed) if "." in name]  # bare names: temp views
        schema, bucketing, partitioning, views = self._describe(tables, label, read_through or [])
        catalog = StatsCatalog()
        inputs = ModelInputs(
            OptimizerContext(
                schema=schema,
                statistics=catalog,
                config=config,
                model=label,
                materialization=materialization,
                bucketing=bucketing,
                partitioning=partitioning,
                spark_output_names=lambda: self._spark_output_names(sql, label),
            )
        )
        try:
            inputs.prepared = prepare_query(sql, schema, parsed=parsed, names_later=True)
        except Exception:
            return inputs  # optimize() prepares it again and reports why; no statistics I/O for it
        if not needs_statistics(inputs.prepared.expression, config):
            return inputs
        if auto_gather and tables and self.run_behind is not None:  # stats.first_pass: behind
            self._first_pass_behind(inputs.gathering, label)
        elif auto_gather and tables:  # a model that reads tables (a unit test reads its fixtures)
            self._first_pass(inputs.gathering)
        keys = key_columns(inputs.prepared.expression)
        used = referenced_columns(inputs.prepared.expression)
        self._describe_bases(views)
        inputs.context.volatile_relations = frozenset(v.lower() for v in views if not self._view_deterministic(v))
        mark_volatile(inputs.prepared.expression, inputs.context.volatile_relations)
        for name in tables:
            db, _, table = name.partition(".")
            if table not in schema.get(db, {}):
                continue
            wanted = _Wanted(keys.get(name, set()), used.get(name, set()))
            if name in views:
                stats = self._view(name, wanted, (auto_gather, why_not), inputs.gathering, depth=0, seen=())
            elif own_table is not None and name.lower() == own_table:
                stats = self._table(name, wanted, (False, "the table this model builds"), inputs.gathering)
            else:
                stats = self._table(name, wanted, (auto_gather, why_not), inputs.gathering)
            if stats is not None:
                catalog.put(name, stats)
        self._prepass(inputs, config, label)
        return inputs

    def _spark_output_names(self, sql: str, label: str) -> list[str] | None:
        """The model's output column names as Spark names them, asked by the optimizer when a rule
        rewrote a model with an output expression without an alias (`SELECT k, COUNT(*)`: Spark
        calls it `count(1)`): one DESCRIBE QUERY, an analysis that runs nothing. The rewrite then
        gives each such expression that name, and builds the table dbt-spark would (TPC-DS: 14 of
        its 99 queries; a model no rule rewrites never pays for it). None: Spark could not say
        (the query runs as written, with the reason)."""
        try:
            return [str(row[0]) for row in self.statistics.execute(f"DESCRIBE QUERY {sql}")]
        except Exception as error:
            self.debug(f"{label}: no output names from Spark ({first_line(error)})")
            return None

    def input_bytes(self, gathering: dict[str, Any]) -> float | None:
        """The size on disk of the tables a model read (the views' tables, not the views), from
        this invocation's catalog: how big a build's inputs were (None: a size unknown)."""
        total = 0.0
        for name, entry in gathering.items():
            if name in (FIRST_PASS, FIRST_PASS_WAIT, FIRST_PASS_BEHIND):
                continue  # the invocation's first pass
            if isinstance(entry, dict) and "over" in entry:
                continue  # a view: its tables are entries of their own
            size = self.statistics.describe(name).size_bytes
            if size is None:
                return None
            total += size
        return total or None

    def _describe_bases(self, views: set[str]) -> None:
        """What the catalog says of the tables under the model's views, all at once (the views
        are estimated through them next)."""
        bases: list[str] = []
        for view in views:
            try:
                bases += self._bases(view)
            except Exception:
                continue  # the view's own estimate says why
        self.statistics.describe_many(bases)

    def _describe(self, tables: list[str], label: str, read_through: list[str]):
        """(schema, bucketing, partitioning, views) of the relations a model reads, from the catalog.
        The tables under its views (`read_through`, from dbt's graph) are read in the same
        statement when they share a database: the views' estimates need them next, and a view this
        invocation built and the seed under it were two SHOW TABLE EXTENDED before each mart over
        them (revenue_by_nation at SF 0.1: 0.13-0.19 s and 0.06-0.13 s, in every warm build)."""
        schema: dict[str, dict[str, dict[str, str]]] = {}
        bucketing: dict[str, list[str]] = {}
        partitioning: dict[str, list[str]] = {}
        views: set[str] = set()
        # The first model to need statistics describes, with what it reads, everything the selected
        # models read that the invocation does not build (one SHOW TABLE EXTENDED per database).
        first = [] if self._first_done else [*self._first_tables, *self._unbuilt_views]
        self.statistics.describe_many([*tables, *first, *read_through])
        for name in tables:
            db, table = name.split(".", 1)
            try:
                info = self.statistics.describe(name)
            except Exception as error:
                self.debug(f"{label}: cannot describe {name}: {error}")
                continue
            schema.setdefault(db, {})[table] = dict(info.columns)
            if info.is_view:
                views.add(name)
            if info.bucket_columns:
                bucketing[name] = list(info.bucket_columns)
            if info.partition_columns:
                partitioning[name] = list(info.partition_columns)
        return schema, bucketing, partitioning, views

    def _prepass(self, inputs: ModelInputs, config: OptimizerConfig, label: str) -> None:
        """The rules' pre-pass: fetch what they ask for (partition pruning's small-side keys)."""
        if config.prune_fetch_values:
            # Partition pruning's pre-pass: the optimizer says which small-side keys to fetch.
            # Without a fetch (prune_fetch_values off) the rule writes semi-join filters where they win.
            context = inputs.context
            fetches = value_fetches(
                inputs.prepared.expression,
                context.schema,
                context.statistics,
                config,
                context.materialization,
                context.partitioning,
                context.volatile_relations,
            )
            context.fetched_values = {fetch.key: self._fetch(fetch, config, label) for fetch in fetches}

    def analyze(self, names: list[str]) -> list[str]:
        """Gather statistics now (`hiveopt analyze`); one line per table. A view holds no data:
        the tables it reads are analyzed instead, and models estimate the view from them."""
        lines = []
        for name in (n.lower() for n in names):
            if self.statistics.describe(name, refresh=True).is_view:
                under = self.tables_under(name)
                lines.append(
                    f"hiveopt: {name} is a view: it has no statistics of its own; models estimate it "
                    f"through its definition over {', '.join(under) or 'no table'}, analyzed now"
                )
                lines += [self._analyze_table(table) for table in under]
            else:
                lines.append(self._analyze_table(name))
        return lines

    def _analyze_table(self, name: str) -> str:
        self.statistics.describe(name, refresh=True)
        result = self.statistics.gather(name)
        return (
            f"hiveopt: analyzed {name}: {int(result.stats.row_count.value or 0)} rows, "
            f"{len(result.stats.columns)} columns in {result.seconds:.2f}s"
        )

    def _bases(self, view: str) -> list[str]:
        """The relations a view's text reads, an unqualified name in _view_database; the text
        parsed once (_view_reads). Every walk through views starts here."""
        info = self.statistics.describe(view)
        default_db = _view_database(view, info)
        return [t if "." in t else f"{default_db}.{t}" for t in _view_reads(info.view_text)[0]]

    def tables_under(self, view: str, depth: int = 0) -> list[str]:
        """The tables a view reads, through the views it reads (for `hiveopt analyze` of a view)."""
        if not self.statistics.describe(view).view_text or depth >= MAX_VIEW_DEPTH:
            return []
        out: list[str] = []
        for base in self._bases(view):
            for table in self.tables_under(base, depth + 1) if self.statistics.describe(base).is_view else [base]:
                if table not in out:
                    out.append(table)
        return out

    def _view_deterministic(self, name: str, depth: int = 0, seen: tuple[str, ...] = ()) -> bool:
        """Whether the view's definition, and those of the views it reads, gives the same rows at
        each reference: Spark expands a view where it is read, so one with rand(), uuid(), an
        unseeded TABLESAMPLE or a LIMIT draws other rows each time, and the rules that would read
        it another number of times, or fetch its keys apart, must not (syntax.mark_volatile). A
        definition that cannot be read counts as not deterministic: those rules skip, the others
        do not care."""
        try:
            info = self.statistics.describe(name)
            if not info.view_text or depth >= MAX_VIEW_DEPTH or name in seen:
                return False
            if not _view_reads(info.view_text)[1]:
                return False
            for base in self._bases(name):
                if self.statistics.describe(base).is_view and not self._view_deterministic(
                    base, depth + 1, seen + (name,)
                ):
                    return False
            return True
        except Exception:
            return False

    # -- tables and views -----------------------------------------------------------------------
    def _table(
        self, name: str, wanted: _Wanted, auto_gather: tuple[bool, str], gathering: dict[str, Any]
    ) -> TableStats | None:
        if self._gathered_behind(name):  # its lock is the pass's until it has run: no wait
            gathering[name] = {"state": BEHIND_STATE, "seconds": 0.0}
            return None
        try:
            stats, state, seconds = self.statistics.ensure(
                name, wanted.keys, auto_gather=auto_gather[0], why_not=auto_gather[1], columns=wanted.used
            )
        except Exception as error:  # this table's statistics are absent; the rules that need them skip
            self.statistics.warn_once(f"gather:{name}", f"statistics of {name} not gathered ({first_line(error)})")
            gathering[name] = {"state": f"failed: {first_line(error)}", "seconds": 0.0}
            return None
        first = {t for entry in (FIRST_PASS, FIRST_PASS_WAIT) for t in (gathering.get(entry) or {}).get("tables", ())}
        if state == "current" and name.lower() in first:
            state = FIRST_PASS_STATE
        gathering[name] = {"state": state, "seconds": round(seconds, 3)}
        return stats

    def _view(
        self,
        name: str,
        wanted: _Wanted,
        auto_gather: tuple[bool, str],
        gathering: dict[str, Any],
        depth: int,
        seen: tuple[str, ...],
    ) -> TableStats | None:
        """The view's statistics derived from its definition, after the statistics of what it
        reads (gathered when absent: the base columns behind the view columns the model reads,
        with key detail for those behind its keys)."""
        try:
            info = self.statistics.describe(name)
            if not info.view_text:
                raise UnsupportedQuery("the catalog holds no text for it")
            if depth >= MAX_VIEW_DEPTH or name in seen:
                raise UnsupportedQuery("views nested too deep, or a view that reads itself")
            default_db = _view_database(name, info)
            bases = self._bases(name)
            schema: dict[str, dict[str, dict[str, str]]] = {}
            base_infos = {}
            self.statistics.describe_many(bases)
            for base in bases:
                base_infos[base] = self.statistics.describe(base)
                db, table = base.split(".", 1)
                schema.setdefault(db, {})[table] = dict(base_infos[base].columns)
            prepared = prepare_query(info.view_text, schema, default_db)  # once, for both below
            keys, used = base_columns(info.view_text, schema, wanted.keys, wanted.used, default_db, prepared)
            below = StatsCatalog()
            for base in bases:
                base_wanted = _Wanted(keys.get(base, set()), used.get(base, set()))
                if base_infos[base].is_view:
                    stats = self._view(base, base_wanted, auto_gather, gathering, depth + 1, seen + (name,))
                else:
                    stats = self._table(base, base_wanted, auto_gather, gathering)
                if stats is not None:
                    below.put(base, stats)
            derived = view_statistics(info.view_text, schema, below, default_db, prepared)
        except Exception as error:
            gathering[name] = {"state": f"view: not estimated ({first_line(error)})", "seconds": 0.0}
            return None
        over = ", ".join(bases)
        if derived is None:
            gathering[name] = {"state": f"view: not estimated (no statistics below it: {over})", "seconds": 0.0}
            return None
        gathering[name] = {
            "state": f"view: estimated through its definition over {over}",
            "seconds": 0.0,
            "rows": derived.row_count.to_dict(),
            "over": bases,  # what Spark scans for it (views among them are listed here too)
        }
        return derived

    # -- the pruning pre-pass -------------------------------------------------------------------
    def _fetch(self, fetch: ValueFetch, config: OptimizerConfig, label: str) -> FetchedValues:
        if self.run_bounded is None:
            return FetchedValues(error="fetch failed (this connection cannot bound a query)")
        deadline = time.perf_counter() + config.prune_fetch_timeout_seconds
        result = fetch_small_side_values(fetch, config.prune_max_values, lambda sql: self.run_bounded(sql, deadline))
        self.debug(f"{label}: fetched small-side keys in {result.seconds:.3f}s: {result.error or 'ok'}")
        return result
