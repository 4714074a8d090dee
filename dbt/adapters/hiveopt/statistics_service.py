"""Gathering, storing and reading statistics: the only place (with verify) where hiveopt queries
Spark. It runs SQL through an `execute(sql) -> rows` function, so the same code serves dbt's
connection (session or Thrift) and a plain SparkSession in tests.

Where statistics live: a Parquet table `<stats schema>.table_statistics` (default schema `hiveopt`) in
the warehouse next to the tables, one JSON payload per table and collection, keyed by the table's
name and a fingerprint of its data (creation time and total file size in the catalog, measured
with Spark's `ANALYZE TABLE ... COMPUTE STATISTICS NOSCAN` when the catalog has none: a table
created and then loaded by INSERTs, as a seed is, has none). Anyone using the same metastore
sees the same statistics; a table whose fingerprint changed since collection is stale and
gathered again (or, within `stats.keep_within_size` of its size then, kept and scaled:
kept_statistics.py).

What one pass over a table is (its query, its row turned into TableStats): statistics_gathering.py.
What the catalog says of a table: table_info.py.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any

from sqlglot import exp

from dbt.adapters.hiveopt.kept_statistics import DEFAULT_KEEP_WITHIN_SIZE, kept_statistics
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.statistics import Estimate, TableStats
from dbt.adapters.hiveopt.statistics_gathering import (
    ALWAYS_DETAILED_TYPES,
    ATOMIC_TYPES,
    DEFAULT_HEAVY_HITTERS,
    DEFAULT_HISTOGRAM_BUCKETS,
    DEFAULT_SAMPLE_ABOVE_ROWS,
    SAMPLE_CHECK_ABOVE_BYTES,
    SAMPLE_ROWS,
    base_type,
    batched,
    count_query,
    gather_query,
    parse_batched_row,
    parse_gather_row,
    scale_sample,
    statistics_from_rows,
)
from dbt.adapters.hiveopt.statistics_store import DEFAULT_STATS_SCHEMA, StatisticsStore, first_line
from dbt.adapters.hiveopt.table_info import (
    TableInfo,
    counted_from_file,
    counted_from_seed,
    describes,
    parse_describe,
    parse_show_extended,
    seed_fingerprint,
)

Execute = Callable[[str], list[tuple[Any, ...]]]
# The state of a table whose stale statistics were kept for its small change of size.
KEPT = "kept"
# Names SHOW TABLE EXTENDED's pattern can match literally (its pattern is a regular expression).
_PLAIN_NAME = re.compile(r"^[a-z0-9_]+$")


@dataclass
class GatherResult:
    stats: TableStats
    seconds: float


class StatisticsService(StatisticsStore):
    """Statistics for the tables a model reads, gathered when absent or stale, cached per run.

    Safe under dbt's threads: one gathering per table at a time (a thread that wants a table
    another thread is gathering waits and uses its result), one load of the store per run, and
    saves that never collide (see `save`). A store that cannot be read or written costs the
    statistics' persistence, never the run's: what was gathered stays in memory for the run."""

    def __init__(
        self,
        execute: Execute,
        stats_schema: str = DEFAULT_STATS_SCHEMA,
        heavy_hitters: int = DEFAULT_HEAVY_HITTERS,
        buckets: int = DEFAULT_HISTOGRAM_BUCKETS,
        warn: Callable[[str], None] | None = None,
        sample_above_rows: int = DEFAULT_SAMPLE_ABOVE_ROWS,
        sample_rows: int = SAMPLE_ROWS,
        sample_check_above_bytes: int = SAMPLE_CHECK_ABOVE_BYTES,
        defer_saves: bool = False,
        keep_within_size: float = DEFAULT_KEEP_WITHIN_SIZE,
    ):
        self.execute = execute
        self.stats_schema = stats_schema
        self.heavy_hitters = heavy_hitters
        self.buckets = buckets
        self.sample_above_rows = sample_above_rows
        self.sample_rows = sample_rows
        self.sample_check_above_bytes = sample_check_above_bytes
        # Stale statistics of a table within this factor of its size at collection are kept,
        # scaled (kept_statistics.py); 1: never.
        self.keep_within_size = keep_within_size
        self._kept: dict[str, tuple[str, TableStats]] = {}  # name -> (fingerprint now, scaled copy)
        # The adapter saves a dbt invocation's statistics once, at its end (each save is a Spark
        # write job of 0.4-0.7 s that the model which gathered would otherwise wait for).
        self.defer_saves = defer_saves
        self._pending: list[tuple[str, str, str, float, str]] = []
        self._warn = warn or (lambda message: None)
        self._lock = threading.RLock()  # guards the dicts below
        self._load_lock = threading.Lock()
        self._store_lock = threading.Lock()
        self._table_locks: dict[str, threading.RLock] = {}
        self._infos: dict[str, TableInfo] = {}
        self._stats: dict[str, TableStats] = {}
        self._warned: set[str] = set()
        self._store_loaded = False
        self._unparsed: dict[str, list[tuple[str, Any, Any]]] = {}  # the store's rows, by table
        self._outcomes: dict[str, str] = {}  # build outcomes recorded in this run (feedback.py)
        # Seeds' loaded rows not counted yet, and the checksum of the file they came from (hold_rows).
        self._held: dict[str, tuple[list[tuple[Any, ...]], str | None]] = {}
        # Seeds this invocation loaded again from the file their stored statistics were counted
        # from, whose held rows a save dropped uncounted (settle_held): those stored statistics.
        self._reloaded: dict[str, TableStats] = {}
        # Per seed table, the checksum dbt's graph keeps of its file now (project_graph.seed_files):
        # statistics counted from that file hold for the seed loaded again with the same size.
        self.seed_files: dict[str, str] = {}
        self._latest_rows: dict[str, tuple[Any, Any]] = {}  # name -> (fingerprint, payload) as stored
        self._store_ready = False
        self._store_unwritable = False
        # Per table, the words of the project's models that read it (project_graph.words_downstream):
        # a first pass reads and details the columns they name. Set by the adapter from dbt's graph.
        self.project_words: dict[str, set[str]] = {}
        # Per table, the words those models use as join or filter keys (key_columns.py): the
        # columns a first pass details; and those they compare by range, the keys it gives a
        # histogram. None: not known, every column named is detailed.
        self.project_keys: dict[str, set[str]] | None = None
        self.project_ranges: dict[str, set[str]] = {}
        # What computes those two from dbt's graph (it parses every model's code), run by the
        # first pass that plans its columns: never on a run whose statistics are all current.
        self.project_keys_from: Callable[[], tuple[dict[str, set[str]], dict[str, set[str]]]] | None = None
        self._keys_lock = threading.Lock()
        # Counts of full passes per table in this process (a test reads them: one per table).
        self.full_passes: dict[str, int] = {}
        # Passes of any kind run by this service (a build timed while one ran is not a fair measure).
        self.passes = 0

    def _table_lock(self, name: str) -> threading.RLock:
        with self._lock:
            return self._table_locks.setdefault(name.lower(), threading.RLock())

    def warn_once(self, key: str, message: str) -> None:
        with self._lock:
            if key in self._warned:
                return
            self._warned.add(key)
        self._warn(message)

    # -- catalog ------------------------------------------------------------------------------
    def describe(self, name: str, refresh: bool = False) -> TableInfo:
        """Columns and fingerprint of a table, once per run unless refreshed (after a build)."""
        name = name.lower()
        self._load_for_seeds([name])  # outside the table's lock: it may read the store
        # What this run has read already, without the table's lock: a pass over the table holds it
        # (the first statistics pass, for seconds), and a model that only wants the columns would
        # wait there for the whole pass, where it cannot say it waited (model_inputs._first_pass).
        with self._lock:
            if name in self._infos and not refresh:
                return self._infos[name]
        with self._table_lock(name):
            with self._lock:
                if name in self._infos and not refresh:
                    return self._infos[name]
            table = exp.to_table(name).sql(DIALECT)
            info = parse_describe(name, self.execute(f"DESCRIBE TABLE EXTENDED {table}"))
            if not info.is_view and info.size_bytes is None:
                info = self._with_reloaded_size(info)
            if not info.is_view and info.size_bytes is None:
                # No size in the catalog: never measured (a table created, then loaded by INSERTs,
                # as a seed is, has none). NOSCAN only lists files.
                self.execute(f"ANALYZE TABLE {table} COMPUTE STATISTICS NOSCAN")
                info = parse_describe(name, self.execute(f"DESCRIBE TABLE EXTENDED {table}"))
            with self._lock:
                self._infos[name] = info
            return info

    def describe_many(self, names: Iterable[str]) -> set[str]:
        """Read what the catalog says of several relations at once into this run's cache: one
        SHOW TABLE EXTENDED per database instead of a DESCRIBE per relation (six relations: 53 ms
        against 147 ms on a warm local session). One statement per database at a time: a thread
        that asks for a database another thread is reading waits, then reads only what is still
        missing (four marts starting together described the same sources four times). A relation
        it does not answer for, or one with no size in the catalog, is left to `describe`.
        Returns the relations a SHOW TABLE EXTENDED of their database did not list: the catalog
        does not have them now (nothing about them is cached: a build may create them)."""
        wanted = {n.lower() for n in names}
        self._load_for_seeds(wanted)
        absent: set[str] = set()
        for db in sorted({name.partition(".")[0] for name in wanted}):
            with self._table_lock(f"{db}.*"):
                with self._lock:
                    tables = sorted(
                        table
                        for d, _, table in (name.partition(".") for name in wanted)
                        if d == db
                        and f"{d}.{table}" not in self._infos
                        and _PLAIN_NAME.match(d)
                        and _PLAIN_NAME.match(table)
                    )
                if len(tables) < 2:
                    continue  # one relation: DESCRIBE says the same
                listed = self._show_extended(db, tables)
                if listed is not None:
                    absent.update(f"{db}.{table}" for table in tables if table not in listed)
        return absent

    def describe_all(self, names: Iterable[str]) -> dict[str, TableInfo]:
        """What the catalog says of several relations (`describe_many`, then a DESCRIBE for each
        it did not answer for), by lowercase name; a relation the catalog does not know is left
        out (the model that reads it says why), with no DESCRIBE of its own where the SHOW TABLE
        EXTENDED of its database did not list it: in the TPC-H benchmark the read-ahead spent
        10 failing DESCRIBEs (0.3 s, beside the first model) on bench sources no run had made."""
        tables = sorted({n.lower() for n in names})
        absent = self.describe_many(tables)
        infos: dict[str, TableInfo] = {}
        for name in tables:
            if name in absent:
                continue
            try:
                infos[name] = self.describe(name)
            except Exception:
                continue
        return infos

    def _show_extended(self, db: str, tables: list[str]) -> set[str] | None:
        """The tables of `tables` the catalog lists in `db` (None: the statement failed), each
        with a size, or a view, cached as DESCRIBE would have it."""
        pattern = exp.Literal.string("|".join(tables)).sql(DIALECT)
        try:
            rows = self.execute(f"SHOW TABLE EXTENDED IN {exp.to_identifier(db).sql(DIALECT)} LIKE {pattern}")
        except Exception:  # describe() reads them one by one
            return None
        listed: set[str] = set()
        for row in rows:
            database, table, temporary, information = (str(v or "") for v in row[:4])
            if temporary.lower() == "true" or database.lower() != db or table.lower() not in tables:
                continue
            listed.add(table.lower())
            info = parse_show_extended(f"{db}.{table}", information)
            if not info.is_view and info.size_bytes is None:
                info = self._with_reloaded_size(info)
            if info.is_view or info.size_bytes is not None:
                with self._lock:
                    self._infos.setdefault(info.name, info)
        return listed

    def forget(self, name: str) -> None:
        """Drop what DESCRIBE said of a relation this invocation is about to (re)build."""
        with self._lock:
            self._infos.pop(name.lower(), None)
            self._reloaded.pop(name.lower(), None)

    # -- the store ----------------------------------------------------------------------------
    def gather(self, name: str, key_columns: Iterable[str] = (), columns: Iterable[str] | None = None) -> GatherResult:
        """The full pass: one aggregate over the table, with detail (heavy hitters, histogram) for
        key columns. `columns`: read only these of the table's columns, and those the project's
        models name (numbers and dates too where the project's models are not known); None
        reads all. One at a time per table: a second caller waits for the first."""
        with self._table_lock(name):
            info = self.describe(name)
            self.load()
            read, keys, ranged = self._pass_plan(name, info, key_columns, columns)
            stats, seconds = self._run_pass(name, read, keys, ranged=ranged)
            self._keep_full_pass(name, info, stats, seconds)
            return GatherResult(stats, seconds)

    def gather_many(self, names: Iterable[str]) -> tuple[dict[str, TableStats], float]:
        """One pass over several tables, in one Spark job (statistics_gathering.batched), for those
        of them that lack current statistics once their locks are held (another thread may have
        gathered one meanwhile); each reads the columns the project's models name, as a first
        pass does. Returns what was gathered and the seconds the job took. Views, and tables the
        catalog cannot describe, are left out."""
        infos = {name: info for name, info in self.describe_all(names).items() if not info.is_view}
        with ExitStack() as held:
            for name in infos:  # in sorted order: two batches never wait for each other
                held.enter_context(self._table_lock(name))
            self.load()
            plans = {
                name: self._pass_plan(name, info, (), set())
                for name, info in infos.items()
                if self.current(name)[0] is None
            }
            if not plans:
                return {}, 0.0
            gathered, seconds = self._run_passes(plans)
            for name, stats in gathered.items():
                self._keep_full_pass(name, infos[name], stats, seconds / len(gathered))
            return gathered, seconds

    def _pass_plan(
        self, name: str, info: TableInfo, key_columns: Iterable[str], columns: Iterable[str] | None
    ) -> tuple[dict[str, str], set[str], set[str] | None]:
        """What a full pass over a table reads (column -> type), details (heavy hitters and a
        histogram) and, of those, gives a histogram (None: every detailed number and date): the
        columns asked for, the columns earlier passes read, and the columns the project's models
        name (project_graph.words_downstream), detailed where they use them as join or filter
        keys, with a histogram where they compare them by range (key_columns). Where the
        project's words are not known (a run-operation, a test), every number and date column
        too: the usual join and range keys, which a later model would otherwise pay a narrow
        pass for."""
        previous = self._stored(name.lower())
        keys = {k.lower() for k in key_columns}
        wanted = None if columns is None else {c.lower() for c in columns} | keys
        ranged: set[str] | None = None
        if previous is not None:  # keep what earlier models asked for: detail and columns
            keys |= {c for c, s in previous.columns.items() if s.heavy_hitters is not None}
            wanted = None if wanted is None else wanted | set(previous.columns)
        if name.lower() in self.project_words:
            named = self._named_by_project(name, info)
            if not self._project_keys_known():
                keys |= named
            else:
                keys |= named & self.project_keys.get(name.lower(), set())
                ranged = named & self.project_ranges.get(name.lower(), set())
                if previous is not None:
                    ranged |= {c for c, s in previous.columns.items() if s.histogram}
            wanted = None if wanted is None else wanted | named
        else:
            numbers = {c.lower() for c, t in info.columns.items() if base_type(t) in ALWAYS_DETAILED_TYPES}
            keys |= numbers
            wanted = None if wanted is None else wanted | numbers
        read = {c: t for c, t in info.columns.items() if wanted is None or c.lower() in wanted}
        return read, keys & {c.lower() for c in read}, ranged

    def _project_keys_known(self) -> bool:
        """project_keys and project_ranges, computed on first use (project_keys_from); False when
        they are not known (every column the project names is detailed, as without them)."""
        with self._keys_lock:
            compute, self.project_keys_from = self.project_keys_from, None
            if compute is not None and self.project_keys is None:
                try:
                    self.project_keys, self.project_ranges = compute()
                except Exception:  # the pass details every named column
                    pass
            return self.project_keys is not None

    def _keep_full_pass(self, name: str, info: TableInfo, stats: TableStats, seconds: float) -> None:
        stats.size_bytes = Estimate.exact(info.size_bytes) if info.size_bytes is not None else Estimate.absent()
        with self._lock:
            self.full_passes[name.lower()] = self.full_passes.get(name.lower(), 0) + 1
        self.save(name, stats, seconds)

    def _named_by_project(self, name: str, info: TableInfo) -> set[str]:
        """The table's columns (lowercase) that the code of the models reading it names, when the
        adapter gave the project's words (`project_words`); booleans and nested types left out."""
        words = self.project_words.get(name.lower(), set())
        return {
            c.lower()
            for c, t in info.columns.items()
            if c.lower() in words and base_type(t) in ATOMIC_TYPES and base_type(t) != "boolean"
        }

    def hold_rows(self, name: str, rows: Sequence[Sequence[Any]], seed_file: str | None = None) -> None:
        """The rows just loaded into a table (a seed; `seed_file`: the checksum dbt keeps of its
        file), counted into its statistics (record_rows) when a model first needs them or when
        they are saved (`flush`), whichever comes first: the DESCRIBE that gives them their
        fingerprint is not paid on the seed's own build."""
        with self._lock:
            self._held[name.lower()] = ([tuple(row) for row in rows], seed_file)
        self.forget(name)  # the table was just created again

    def _settle(self, name: str) -> None:
        """Count a seed's held rows now (under the table's lock: one thread counts them); a seed
        loaded again from the file its stored statistics were counted from is not counted again."""
        name = name.lower()
        with self._lock:
            if name not in self._held:
                return
        self.load()  # `_drop_if_same_file` compares with the store's rows
        with self._table_lock(name):
            if self._drop_if_same_file(name):
                return
            with self._lock:
                held = self._held.pop(name, None)
            if held is not None:
                self.record_rows(name, *held)

    def _drop_if_same_file(self, name: str) -> bool:
        """Drop a held seed's rows uncounted when it was loaded from the file its stored statistics
        were counted from (`_same_file`): those statistics hold for it (`reloaded_size`,
        `_with_reloaded_size`). Whether it did."""
        stored = self._same_file(name)
        if stored is None:
            return False
        with self._lock:
            self._held.pop(name, None)
            self._reloaded[name] = stored
        return True

    def settle_held(self) -> None:
        """Count every seed's held rows, their tables described together. A seed that cannot be
        counted is a warning: the next model that reads it gathers its statistics. A seed loaded
        again from the file its stored statistics were counted from is left out (`_same_file`)."""
        with self._lock:
            names = sorted(self._held)
        if names:
            # `_same_file` compares with the store's rows: read it first where nothing has (a
            # project whose models read only seeds, as jaffle_shop's do, has no sources to read it
            # ahead for). Unread, every build described its reloaded seeds (0.26 s beside the
            # staging views) only to find, once the save read the store, nothing to write.
            self.load()
        names = [name for name in names if not self._drop_if_same_file(name)]
        if names:
            self.describe_many(names)
            for name in names:
                try:
                    self._settle(name)
                except Exception as error:
                    self.warn_once(f"held:{name}", f"statistics of {name} not counted ({first_line(error)})")

    def _same_file(self, name: str) -> TableStats | None:
        """The stored statistics of a held seed when it was loaded from the file they were counted
        from (else None): then there is nothing to save, and `settle_held` drops its rows uncounted,
        with no catalog read (every `dbt build` loads its seeds again: in the example project's
        builds that read was a SHOW TABLE EXTENDED of 0.2-0.7 s beside the models). A model that
        reads the seed checks the statistics against the table as it is, its size included, as
        any statistics."""
        with self._lock:
            held, reloaded = self._held.get(name), self._reloaded.get(name)
        if held is None:  # held rows a save dropped already, as found then
            return reloaded
        seed_file = held[1]
        stored = self._stored(name) if seed_file else None
        return stored if stored is not None and counted_from_file(stored.fingerprint, seed_file) else None

    def _load_for_seeds(self, names: Iterable[str]) -> None:
        """Read the store first when one of `names` is a seed this invocation loaded (its rows held,
        or found loaded again from the same file): whether the catalog's size is needed for it
        depends on the statistics stored for it (`_with_reloaded_size`). Call outside table locks."""
        with self._lock:
            seeds = any(name in self._held or name in self._reloaded for name in names)
        if seeds:
            self.load()

    def _with_reloaded_size(self, info: TableInfo) -> TableInfo:
        """A seed the catalog gives no size for, loaded again by this invocation from the file its
        stored statistics were counted from, with the size those statistics have (the same rows,
        written again by the same statements), instead of an `ANALYZE ... NOSCAN`: Spark's INSERT
        keeps no size in the catalog (as dbt-spark's session runs it: keeping it cost every seed's
        load 0.08 s alone and 0.3 s beside a build, the metastore written on each INSERT). Any
        other table is returned as it is. The statistics then describe the table (`describes`:
        the same size and file), and nothing is measured for them.

        >>> s = StatisticsService(lambda sql: [])
        >>> s._with_reloaded_size(TableInfo("a.n", {}, "MANAGED", created="Tue")).size_bytes is None
        True
        """
        stored = self._same_file(info.name) if self._store_loaded else None
        if stored is None or stored.size_bytes.is_absent:
            return info
        return replace(info, size_bytes=int(stored.size_bytes.value))

    def counted_from(self, name: str, seed_file: str | None) -> bool:
        """Whether the statistics stored for a seed were counted from the file whose checksum is
        `seed_file` (then loading it again needs no size in the catalog), as far as the store is
        read: a store not read yet answers False, with no read here (a seed's load does not wait).

        >>> StatisticsService(lambda sql: []).counted_from("a.n", "ab")
        False
        """
        if not seed_file or not self._store_loaded:
            return False
        stored = self._stored(name.lower())
        return stored is not None and counted_from_file(stored.fingerprint, seed_file)

    def reloaded_size(self, name: str) -> float | None:
        """The size on disk of a seed this invocation loaded again from the file its stored
        statistics were counted from, as those statistics have it (the same file, written again),
        with no catalog read; None for any other relation (and once a model has counted the seed:
        its catalog entry is then read). What the memory of decisions compares a model's inputs by,
        within feedback.RESIZE_FACTOR: a mart remembered as having nothing to gain read the seeds
        it reads through views from the catalog for it (`SHOW TABLE EXTENDED IN analytics LIKE
        'nations|regions'`: revenue_by_nation at SF 0.1 spent a median 102 ms before its build)."""
        self.load()
        stored = self._same_file(name.lower())
        if stored is None or stored.size_bytes.is_absent:
            return None
        return float(stored.size_bytes.value)

    @property
    def pending(self) -> int:
        """Statistics not saved yet: gathered (`defer_saves`), or seeds' rows held."""
        with self._lock:
            return len(self._pending) + len(self._held)

    def flush(self) -> None:
        """Save what is pending, seeds' held rows counted first."""
        self.settle_held()
        super().flush()

    def record_rows(self, name: str, rows: Sequence[Sequence[Any]], seed_file: str | None = None) -> GatherResult:
        """Statistics of a table from the rows just loaded into it (a seed, from the file whose
        checksum is `seed_file`), with no Spark pass; a full pass instead when the rows do not
        line up with the catalog's columns."""
        with self._table_lock(name):
            info = self.describe(name)
            if any(len(row) != len(info.columns) for row in rows):
                return self.gather(name)
            started = time.perf_counter()
            fingerprint = seed_fingerprint(info.fingerprint, seed_file)
            stats = statistics_from_rows(info.columns, rows, fingerprint, self.heavy_hitters, self.buckets)
            stats.size_bytes = Estimate.exact(info.size_bytes) if info.size_bytes is not None else Estimate.absent()
            seconds = time.perf_counter() - started
            self.save(name, stats, seconds)
            return GatherResult(stats, seconds)

    def gather_columns(
        self, name: str, stats: TableStats, columns: Iterable[str], key_columns: Iterable[str]
    ) -> GatherResult:
        """A pass over only `columns` (those the statistics lack, or keys that lack detail),
        merged into a copy of the current statistics (other threads may be reading those). Reading
        a few columns costs a fraction of the whole table's pass."""
        with self._table_lock(name):
            info = self.describe(name)
            keys = {k.lower() for k in key_columns}
            wanted = {c.lower() for c in columns} | keys
            read = {c: t for c, t in info.columns.items() if c.lower() in wanted}
            keys |= {c.lower() for c, t in read.items() if base_type(t) in ALWAYS_DETAILED_TYPES}
            detail, seconds = self._run_pass(name, read, keys, known_rows=stats.row_count)
            merged_stats = TableStats.from_dict(stats.to_dict())
            for column_name, column in detail.columns.items():
                merged = merged_stats.columns.setdefault(column_name, column)
                if column_name in keys:
                    merged.heavy_hitters = column.heavy_hitters if column.heavy_hitters is not None else []
                    merged.histogram = column.histogram
            self.save(name, merged_stats, seconds)
            return GatherResult(merged_stats, seconds)

    def _run_pass(
        self,
        name: str,
        columns: dict[str, str],
        keys: set[str],
        known_rows: Estimate | None = None,
        ranged: set[str] | None = None,
    ) -> tuple[TableStats, float]:
        """One aggregate over `columns`; `known_rows`: the exact row count of the table as it is
        (from a pass over the same data), which spares a big table its COUNT(*); `ranged`: the
        keys given a histogram (None: every number and date among them)."""
        counted = {name.lower(): int(known_rows.value)} if known_rows is not None and known_rows.is_exact else {}
        gathered, seconds = self._run_passes({name.lower(): (columns, keys, ranged)}, counted)
        return gathered[name.lower()], seconds

    def _run_passes(
        self, plans: dict[str, tuple[dict[str, str], set[str], set[str] | None]], counted: dict[str, int] | None = None
    ) -> tuple[dict[str, TableStats], float]:
        """The aggregate passes of several tables (name -> columns read, key columns detailed,
        those of them given a histogram: _pass_plan) as
        one query; a big table is read from a sample after an exact count (one query counts them
        all, from Parquet footers) unless `counted` knows its rows."""
        with self._lock:
            self.passes += 1
        started = time.perf_counter()
        rows = dict(counted or {})
        big = [
            name
            for name in plans
            if name not in rows
            and self.sample_above_rows
            and (self.describe(name).size_bytes or 0) > self.sample_check_above_bytes
        ]
        if big:
            rows.update({str(t).lower(): int(float(n)) for t, n in self.execute(count_query(big).sql(DIALECT))})
        percents = {
            name: 100.0 * self.sample_rows / rows[name]
            for name in plans
            if self.sample_above_rows and rows.get(name, 0) > self.sample_above_rows
        }
        queries = {
            name: gather_query(
                name, read, keys, self.heavy_hitters, self.buckets, sample_percent=percents.get(name), ranged=ranged
            )
            for name, (read, keys, ranged) in plans.items()
        }
        gathered: dict[str, TableStats] = {}
        for table_name, payload in self.execute(batched(queries).sql(DIALECT)):
            name = str(table_name).lower()
            read, keys, _ = plans[name]
            query = queries[name]
            names = [p.alias_or_name for p in query.selects]
            stats = parse_gather_row(names, parse_batched_row(query, payload), read, self.describe(name).fingerprint)
            if name in percents:
                stats = scale_sample(stats, rows[name])
            for key in keys:  # detail asked for: [] records "gathered, nothing hot" (or not applicable)
                if key in stats.columns and stats.columns[key].heavy_hitters is None:
                    stats.columns[key].heavy_hitters = []
            gathered[name] = stats
        return gathered, time.perf_counter() - started

    def current(self, name: str) -> tuple[TableStats | None, str]:
        """Stored statistics if they match the table as it is now, with the reason otherwise."""
        name = name.lower()
        self._settle(name)
        info = self.describe(name)
        if info.is_view:
            return None, "view: no statistics (its own tables have them)"
        self.load()
        stats = self._stored(name)
        if stats is None:
            return None, "never gathered"
        if not describes(stats.fingerprint, info, self.seed_files.get(name)):
            kept = self._kept_across(name, stats, info)
            if kept is not None:
                ratio = (kept.size_bytes.value or 0) / (stats.size_bytes.value or 1)
                return kept, (
                    f"{KEPT}: stale, the table has {ratio:.3f}x the bytes it had when gathered "
                    f"({stats.collected_at}), within stats.keep_within_size {self.keep_within_size:g}: "
                    "counts scaled, estimated"
                )
            return None, f"stale (table changed since {stats.collected_at})"
        return stats, "current"

    def _kept_across(self, name: str, stats: TableStats, info: TableInfo) -> TableStats | None:
        """Stale statistics kept for a table whose size changed little (kept_statistics.py), once
        per fingerprint the catalog gives; never a seed's (counted from its file)."""
        if self.keep_within_size <= 1 or counted_from_seed(stats.fingerprint):
            return None
        with self._lock:
            known = self._kept.get(name)
        if known is not None and known[0] == info.fingerprint:
            return known[1]
        kept = kept_statistics(stats, info.size_bytes, self.keep_within_size)
        if kept is not None:
            with self._lock:
                self._kept[name] = (info.fingerprint, kept)
        return kept

    def ensure(
        self,
        name: str,
        key_columns: Iterable[str] = (),
        auto_gather: bool = True,
        why_not: str = "automatic gathering is off",
        columns: Iterable[str] | None = None,
    ) -> tuple[TableStats | None, str, float]:
        """Current statistics of a table, gathering them when absent or stale, and a pass over the
        columns they lack (a column the model reads, a key column's detail). `columns`: the
        columns the model reads (None: all). Returns (stats or None, what happened, seconds spent
        gathering). Under the table's lock: a thread that finds another gathering the table waits
        and then reads its result."""
        with self._table_lock(name):
            return self._ensure(name, key_columns, auto_gather, why_not, columns)

    def _ensure(
        self, name: str, key_columns: Iterable[str], auto_gather: bool, why_not: str, columns: Iterable[str] | None
    ) -> tuple[TableStats | None, str, float]:
        stats, state = self.current(name)
        info = self.describe(name)
        if info.is_view:
            return None, state, 0.0
        keys = {k.lower() for k in key_columns}
        known = {c.lower() for c in info.columns}
        wanted = known if columns is None else {c.lower() for c in columns} & known
        missing: set[str] = set()
        if stats is not None:
            missing = {c for c in wanted | (keys & known) if c not in stats.columns}
            missing |= {k for k in keys if k in stats.columns and stats.columns[k].heavy_hitters is None}
        if stats is not None and not missing:
            return stats, state, 0.0
        if not auto_gather:
            return stats, f"{state}; {why_not}", 0.0
        if stats is not None and not state.startswith(KEPT):  # a narrow pass would save kept ones as current
            result = self.gather_columns(name, stats, missing, keys & missing)
            return result.stats, f"gathered {', '.join(sorted(missing))} (a narrow pass)", result.seconds
        result = self.gather(name, keys, None if columns is None else wanted)
        return result.stats, "gathered", result.seconds
