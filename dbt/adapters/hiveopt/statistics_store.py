"""Where statistics live, and how saves and loads stay safe: the `StatisticsStore` half of the
statistics service (statistics_service.py holds the gathering half and the state both share).

A Parquet table `<stats schema>.table_statistics` (default schema `hiveopt`) in the warehouse next
to the tables, partitioned by save: one JSON payload per table and collection, keyed by the table's
name and a fingerprint of its data. Each save writes its own new partition with `INSERT OVERWRITE
... PARTITION (save_id)` in dynamic mode, which Spark stages per job, so concurrent saves (threads,
processes) never collide; a load that finds many saves compacts them (docs/statistics.md).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import uuid
from collections.abc import Iterable
from typing import Any

from sqlglot import exp

from dbt.adapters.hiveopt.feedback import NO_GAIN, PREFIX, VARIANTS, NoGain, Outcome, outcomes_of, store_name
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.statistics import TableStats
from dbt.adapters.hiveopt.table_info import data_version

DEFAULT_STATS_SCHEMA = "hiveopt"
# Not `statistics`: stores of earlier versions, an unpartitioned table of that name, are left alone.
STATS_TABLE = "table_statistics"
# The store is append-only (each save is a partition of one file); past this many superseded rows,
# or saves, a run rewrites it with the latest rows only. Saves because the run's first model
# waits for the read: 126 one-row files took 0.64 s to collect on a warm local session, one 0.21 s.
COMPACT_AFTER_SUPERSEDED_ROWS = 200
COMPACT_AFTER_SAVES = 16
# What Spark says of a database or table that does not exist (Spark 4's error classes, Spark 3's text).
_NOT_FOUND = re.compile(r"TABLE_OR_VIEW_NOT_FOUND|SCHEMA_NOT_FOUND|Table or view not found|Database .* not found")


def _without_time(payload: Any) -> Any:
    """A stored payload with its time of collection left out, and its fingerprint as the data it
    stands for (what is compared between saves: a seed loaded again has a new creation time)."""
    try:
        data = json.loads(str(payload))
    except ValueError:
        return payload
    if isinstance(data, dict):
        data.pop("collected_at", None)
        if "fingerprint" in data:
            data["fingerprint"] = data_version(data["fingerprint"])
    return data


def first_line(error: BaseException, limit: int = 200) -> str:
    """An error as one short line: a Java stack trace or a gRPC dump stays out of dbt's log."""
    text = str(error).strip()
    line = text.splitlines()[0] if text else ""
    return f"{type(error).__name__}: {line[:limit]}"


class StatisticsStore:
    """Reading and writing the statistics table. Mixed into StatisticsService, which owns the
    state these methods use (execute, the locks, the cached rows and the pending saves)."""

    @property
    def store_table(self) -> exp.Table:
        return exp.table_(STATS_TABLE, db=self.stats_schema)

    def _ensure_store(self) -> None:
        with self._store_lock:  # not self._lock: threads reading the dicts need not wait for DDL
            if self._store_ready:
                return
            self.execute(f"CREATE DATABASE IF NOT EXISTS {exp.to_identifier(self.stats_schema).sql(DIALECT)}")
            # Partitioned by save: every save is an INSERT OVERWRITE of its own new partition in
            # dynamic mode, which Spark stages in a folder of its own (.spark-staging-<job id>).
            # Plain INSERT INTOs of one table share its _temporary/0 folder, and concurrent ones
            # (dbt's threads, or two dbt processes on one metastore) delete each other's files.
            self.execute(
                f"CREATE TABLE IF NOT EXISTS {self.store_table.sql(DIALECT)} (table_name STRING, fingerprint STRING, "
                "saved_at STRING, gather_seconds DOUBLE, payload STRING, save_id STRING) USING parquet "
                "PARTITIONED BY (save_id) OPTIONS ('partitionOverwriteMode' 'dynamic')"
            )
            self._store_ready = True

    def load(self, names: Iterable[str] = ()) -> None:
        """Read the latest statistics of every table in the store, once per run (one query). A row
        that does not parse is skipped with a warning naming its table (that table is gathered
        again); a store that cannot be read is a warning too, and the run goes on without it. A
        store not created yet is an empty one: it is created by the first save, not by a read (the
        two DDL statements cost every invocation 40-80 ms before its first model that needed
        statistics)."""
        with self._load_lock:
            if self._store_loaded:
                return
            try:
                query = exp.select("table_name", "fingerprint", "saved_at", "payload", "save_id").from_(
                    self.store_table
                )
                rows = self.execute(query.sql(DIALECT))
            except Exception as error:
                if not _NOT_FOUND.search(str(error)):
                    self.warn_once(
                        "store",
                        f"statistics store {self.store_table.sql(DIALECT)} cannot be read "
                        f"({first_line(error)}): statistics are gathered again and kept for this run",
                    )
                self._store_loaded = True
                return
            # Read: it exists, and a save needs no DDL first (CREATE DATABASE and CREATE TABLE IF
            # NOT EXISTS took 0.2-0.5 s on every invocation over Thrift on the tests' cluster).
            with self._store_lock:
                self._store_ready = True
            by_table: dict[str, list[tuple[str, Any, Any]]] = {}
            for table_name, fingerprint, saved_at, payload, _save in rows:
                by_table.setdefault(str(table_name), []).append((str(saved_at), fingerprint, payload))
            with self._lock:  # parsed per table on first use (`_stored`): most runs read a few
                self._unparsed = by_table
                # each name's latest row as stored, for `flush` to leave out what is saved already
                self._latest_rows = {n: max(v, key=lambda r: r[0])[1:] for n, v in by_table.items()}
            self._store_loaded = True
            saves = {row[4] for row in rows}
            if len(rows) - len(by_table) > COMPACT_AFTER_SUPERSEDED_ROWS or len(saves) > COMPACT_AFTER_SAVES:
                self._compact(by_table, saves)

    def _stored(self, name: str) -> TableStats | None:
        """This run's statistics of a table, else the newest valid ones the store holds (parsed now)."""
        with self._lock:
            if name in self._stats:
                return self._stats[name]
            # Read, not taken: another thread asking while this one parses must find the rows
            # too (taken, it found neither them nor the parsed statistics: "never gathered").
            versions = self._unparsed.get(name)
        stats = self._newest_valid(name, versions) if versions else None
        with self._lock:
            if stats is not None:
                self._stats.setdefault(name, stats)
            if versions is not None and self._unparsed.get(name) is versions:
                del self._unparsed[name]  # parsed (or found invalid) once: not parsed again
            return self._stats.get(name)

    # -- build outcomes (feedback.py): rows named `outcome:<model>:<variant>` in the same table ----
    def outcomes(self, model: str) -> dict[str, Outcome]:
        """The latest measured build of each variant of a model (read with the statistics)."""
        self.load()
        rows: dict[str, Any] = {}
        with self._lock:
            for variant in VARIANTS:
                name = store_name(model, variant)
                if name in self._outcomes:
                    rows[name] = self._outcomes[name]
                elif self._unparsed.get(name):
                    rows[name] = max(self._unparsed[name], key=lambda v: v[0])[2]
        return outcomes_of(rows, model)

    def record_outcome(self, model: str, outcome: Outcome) -> None:
        """Store a build's outcome: saved with the invocation's statistics (or now, when saves
        are not deferred)."""
        name = store_name(model, outcome.variant)
        self._remember(name, (name, outcome.rewrite, outcome.built_at, round(outcome.seconds, 3), outcome.payload()))

    def no_gain(self, model: str) -> NoGain | None:
        """What the optimizer last found for a model it left as written (feedback.NoGain), if any."""
        self.load()
        name = store_name(model, NO_GAIN)
        with self._lock:
            payload = self._outcomes.get(name)
            if payload is None and self._unparsed.get(name):
                payload = max(self._unparsed[name], key=lambda v: v[0])[2]
        return NoGain.from_payload(str(payload)) if payload is not None else None

    def record_no_gain(self, model: str, memory: NoGain) -> None:
        """Remember that the optimizer found nothing to gain for a model (forgotten with its outcomes)."""
        name = store_name(model, NO_GAIN)
        self._remember(name, (name, memory.key, memory.decided_at, 0.0, memory.payload()))

    def _remember(self, name: str, row: tuple[str, str, str, float, str]) -> None:
        with self._lock:
            self._outcomes[name] = row[4]
            if self._store_unwritable:
                return
            if self.defer_saves:
                self._pending = [pending for pending in self._pending if pending[0] != name] + [row]
                return
        self._write([row])

    def forget_outcomes(self, models: Iterable[str] | None = None) -> int:
        """Forget the measured builds of these models (`db.table`; None: of every model), so that
        their rewrites are measured again: the store is rewritten as one save of the latest row of
        everything else, and the saves read are dropped. Returns how many outcome names went."""
        prefixes = None if models is None else tuple(f"{PREFIX}{m.lower()}:" for m in models)
        query = exp.select("table_name", "fingerprint", "saved_at", "payload", "save_id").from_(self.store_table)
        rows = self.execute(query.sql(DIALECT))
        kept: dict[str, list[tuple[str, Any, Any]]] = {}
        gone: set[str] = set()
        for table_name, fingerprint, saved_at, payload, _save in rows:
            name = str(table_name)
            if name.startswith(PREFIX) and (prefixes is None or name.startswith(prefixes)):
                gone.add(name)
            else:
                kept.setdefault(name, []).append((str(saved_at), fingerprint, payload))
        if gone:
            self._compact(kept, {row[4] for row in rows})
        with self._lock:
            self._outcomes = {n: p for n, p in self._outcomes.items() if n not in gone}
            self._unparsed = {n: v for n, v in self._unparsed.items() if n not in gone}
        return len(gone)

    def _newest_valid(self, table: str, versions: list[tuple[str, Any, Any]]) -> TableStats | None:
        for saved_at, fingerprint, payload in sorted(versions, key=lambda v: v[0], reverse=True):
            try:
                stats = TableStats.from_dict(json.loads(str(payload)))
            except (ValueError, TypeError, KeyError, AttributeError) as error:
                self.warn_once(
                    f"payload:{table}",
                    f"statistics of {table} saved at {saved_at} are unreadable "
                    f"({type(error).__name__}: {str(error)[:120]}): skipped, gathered again",
                )
                continue
            stats.fingerprint = str(fingerprint)
            return stats
        return None

    def _compact(self, by_table: dict[str, list[tuple[str, Any, Any]]], saves: set[Any]) -> None:
        """Write the latest row per table as one new save, then drop the saves just read (saves
        made meanwhile, by this run or another, are other partitions and stay)."""
        rows = [(name, *max(versions, key=lambda v: v[0])) for name, versions in by_table.items()]
        save_id = f"compacted-{uuid.uuid4().hex}"
        values = exp.Values(
            expressions=[
                exp.Tuple(
                    expressions=[
                        exp.Literal.string(str(name)),
                        exp.Literal.string(str(fingerprint)),
                        exp.Literal.string(saved_at),
                        exp.Literal.number(0),
                        exp.Literal.string(str(payload)),
                        exp.Literal.string(save_id),
                    ]
                )
                for name, saved_at, fingerprint, payload in rows
            ]
        )
        try:
            if rows:
                self.execute(self._insert(values).sql(DIALECT))
            drop = exp.Alter(
                this=self.store_table,
                kind="TABLE",
                actions=[
                    exp.DropPartition(
                        exists=True,
                        expressions=[
                            exp.Partition(
                                expressions=[
                                    exp.EQ(this=exp.column("save_id"), expression=exp.Literal.string(str(old)))
                                ]
                            )
                            for old in sorted(saves, key=str)
                        ],
                    )
                ],
            )
            self.execute(drop.sql(DIALECT))
        except Exception as error:  # a compaction that fails leaves more rows to read, nothing worse
            self.warn_once("compact", f"statistics store not compacted ({first_line(error)})")

    def _insert(self, values: exp.Values) -> exp.Insert:
        table = self.store_table
        table.set("partition", exp.Partition(expressions=[exp.column("save_id")]))
        return exp.insert(values, table, overwrite=True)

    def save(self, name: str, stats: TableStats, seconds: float) -> None:
        """Keep the statistics for this run, then store them as a save of their own (a new
        partition: concurrent saves never touch each other's files), or, with `defer_saves`,
        with the run's other statistics in one save at `flush`. A failed save is a warning; the
        statistics stay in memory for the run."""
        saved_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")
        row = (
            name.lower(),
            stats.fingerprint or "",
            saved_at,
            round(seconds, 3),
            json.dumps(stats.to_dict(), default=str),
        )
        with self._lock:
            self._stats[name.lower()] = stats
            if self._store_unwritable:
                return
            if self.defer_saves:  # a table's later statistics (a narrow pass merged) replace its earlier
                self._pending = [pending for pending in self._pending if pending[0] != row[0]] + [row]
                return
        self._write([row])

    @property
    def pending(self) -> int:
        """Statistics gathered and not yet saved (`defer_saves`)."""
        with self._lock:
            return len(self._pending)

    def flush(self) -> None:
        """Store the statistics that `save` deferred, as one save; statistics the store already
        holds as they are (a seed loaded again with the same rows) are not written again: every
        save is a partition the next load lists (so the store is read first, if this run has
        not: a project with seeds and no sources reads it nowhere else)."""
        if self.pending:
            self.load()
        with self._lock:
            rows, self._pending = self._pending, []
            rows = [row for row in rows if not self._unchanged(row)]
        if rows:
            self._write(rows)

    def _unchanged(self, row: tuple[str, str, str, float, str]) -> bool:
        """Whether the store's latest row of this name says the same (its time of collection aside)."""
        name, fingerprint, _, _, payload = row
        stored = self._latest_rows.get(name) if self._store_loaded else None
        if stored is None:
            return False
        stored_fingerprint, stored_payload = stored
        same = data_version(str(stored_fingerprint)) == data_version(fingerprint)
        return same and _without_time(stored_payload) == _without_time(payload)

    def _write(self, rows: list[tuple[str, str, str, float, str]]) -> None:
        save_id = uuid.uuid4().hex
        values = exp.Values(
            expressions=[
                exp.Tuple(
                    expressions=[
                        exp.Literal.string(name),
                        exp.Literal.string(fingerprint),
                        exp.Literal.string(saved_at),
                        exp.Literal.number(seconds),
                        exp.Literal.string(payload),
                        exp.Literal.string(save_id),
                    ]
                )
                for name, fingerprint, saved_at, seconds, payload in rows
            ]
        )
        try:
            self._ensure_store()
            self.execute(self._insert(values).sql(DIALECT))
        except Exception as error:
            with self._lock:
                self._store_unwritable = True  # one failed statement per run, not one per table
            names = ", ".join(sorted({row[0] for row in rows}))
            self.warn_once(
                "save",
                f"statistics of {names} not saved to {self.store_table.sql(DIALECT)} "
                f"({first_line(error)}): statistics are kept for this run only",
            )

    # -- gathering ----------------------------------------------------------------------------
