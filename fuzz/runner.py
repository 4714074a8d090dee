"""One fuzz case end to end, and a run of many with its counts.

A case is a query, statistics, config, a materialization, Spark settings (ANSI mode, mostly on
as Spark 4's default; adaptive execution on or off; 1, 2 or 4 shuffle partitions) and how the
partition-pruning pre-pass behaves. `run_case` builds the OptimizerContext as the adapter does
(impl.py `_optimize`): prepare the query, plan the small-side value fetches and run them on
Spark with `fetch_small_side_values` (or simulate a failed fetch, or none), then `optimize`; when
the SQL changed it runs the original and the optimized query on Spark and compares column names,
column types and the rows as multisets (compare.py).

Outcomes: `unchanged` (ran the original only, or nothing), `same`, `mismatch` (names, types or
rows differ), `optimized_error` (the optimized SQL fails where the original ran),
`original_error` (the original fails: a generator bug), `optimizer_raised` (an exception escaped
the optimizer or its pre-pass: the adapter would fail the dbt run), `nondeterministic_duplicated`
(a query with rand() whose optimized SQL calls it more often), `nondeterministic_fetched` (a
pre-pass fetch that read rand() or a TABLESAMPLE, by share or by rows: its keys are another draw
than the query's), `optimized_timeout` (the optimized query ran past QUERY_TIMEOUT_SECONDS where
the original did not: a model that would not finish, reported as a failure), `original_timeout`,
`skipped` (a non-deterministic query, not compared), `inputs_rejected`
(OptimizerConfig.from_dicts refused the drawn profile: its own validation, counted apart). A table
whose statistics payload does not parse is left out of the catalog, as the statistics store skips
it. The original and the optimized query run side by side
(two jobs of one session).
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.hiveopt.impl import fetch_small_side_values
from dbt.adapters.hiveopt.optimizer import (
    OptimizerConfig,
    OptimizerContext,
    StatsCatalog,
    TableStats,
    key_columns,
    optimize,
    prepare_query,
)
from dbt.adapters.hiveopt.optimizer.context import FetchedValues
from dbt.adapters.hiveopt.optimizer.dialect import DIALECT
from dbt.adapters.hiveopt.optimizer.pipeline import RULE_NAMES, value_fetches
from dbt.adapters.hiveopt.optimizer.prepare import parse_query
from dbt.adapters.hiveopt.optimizer.statistics import StatisticsError
from fuzz import inputs
from fuzz.compare import RowDiff, compare_rows
from fuzz.queries import Query, QueryGenerator, without_output_aliases
from fuzz.tables import FuzzData

# Each rule should fire on at least this share of the queries, or the run warns that the generator
# no longer exercises it.
REWRITING_RULES = RULE_NAMES
MIN_FIRE_SHARE = 0.05
BIG_RESULT_ROWS = 60_000
# A query still running after this long is cancelled (counted apart, as a timeout).
QUERY_TIMEOUT_SECONDS = 120.0
# The share of cases whose output expressions lose some of their aliases (Spark names them).
UNALIASED_SHARE = 0.2
FAILURES = (
    "mismatch",
    "optimized_error",
    "optimizer_raised",
    "nondeterministic_duplicated",
    "nondeterministic_fetched",
    "optimized_timeout",
)


@dataclass
class Case:
    seed: int
    index: int
    query: Query
    stats: dict[str, Any]
    profile: dict[str, Any]
    model: dict[str, Any]
    materialization: str
    ansi: bool
    fetch_mode: str  # "fetch", "fail" (a simulated timeout), "none" (no pre-pass)
    # Spark settings of the case's runs (both queries run under the same ones)
    adaptive: bool = True
    shuffle_partitions: int = 4

    def spark_settings(self) -> dict[str, str]:
        return {
            "spark.sql.ansi.enabled": str(self.ansi).lower(),
            "spark.sql.adaptive.enabled": str(self.adaptive).lower(),
            "spark.sql.shuffle.partitions": str(self.shuffle_partitions),
        }

    def to_dict(self) -> dict[str, Any]:
        return dict(
            seed=self.seed,
            index=self.index,
            shape=self.query.shape,
            sql=self.query.sql,
            deterministic=self.query.deterministic,
            statistics=self.stats,
            profile=self.profile,
            model=self.model,
            materialization=self.materialization,
            ansi=self.ansi,
            fetch_mode=self.fetch_mode,
            adaptive=self.adaptive,
            shuffle_partitions=self.shuffle_partitions,
        )


@dataclass
class Outcome:
    case: Case
    kind: str
    optimized_sql: str | None = None
    changed: bool = False
    fallback: str | None = None
    # Rules that failed on the case (each skipped, the others' rewrites kept): optimizer bugs.
    rule_errors: list[str] = field(default_factory=list)
    switched_off: bool = False
    fired: list[str] = field(default_factory=list)
    decisions: list[dict] = field(default_factory=list)
    error: str | None = None
    detail: str | None = None  # what differs, for a mismatch
    diff: RowDiff | None = None
    original_ran: bool = False
    both_ran: bool = False
    rows: int = 0
    fetched: dict[str, Any] = field(default_factory=dict)
    fetch_sql: list[str] = field(default_factory=list)  # the pre-pass's value queries, as run
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.kind in FAILURES


def make_case(data: FuzzData, seed: int, index: int) -> Case:
    """Case `index` of a run with `seed`: each case draws from its own generator, so one case can
    be replayed alone (`python -m fuzz --seed S --case I`)."""
    case_seed = seed * 1_000_003 + index
    rng = random.Random(f"inputs:{case_seed}")
    query = QueryGenerator(data, seed=case_seed).query()
    keys, tables = query_keys(query.sql, data.schema())
    stats = inputs.random_statistics(rng, data, keys)
    profile, model = inputs.random_config(rng, data, tables, stats, keys)
    unaliased = random.Random(f"unaliased:{case_seed}")  # its own draws: the cases above stay as they were
    if unaliased.random() < UNALIASED_SHARE:
        sql = without_output_aliases(query.sql, unaliased)
        query = Query(sql, query.shape, query.deterministic) if sql else query
    return drawn_case(rng, seed, index, query, stats, profile, model)


def query_keys(sql: str, schema: dict) -> tuple[dict[str, set[str]], list[str]]:
    """What the adapter's collector would look at: the query's key columns by `db.table`, and the
    tables it reads (unqualified); nothing for a query that does not prepare."""
    try:
        prepared = prepare_query(sql, schema)
    except Exception:
        return {}, []
    return key_columns(prepared.expression), [t.split(".")[-1] for t in prepared.tables]


def drawn_case(
    rng: random.Random,
    seed: int,
    index: int,
    query: Query,
    stats: dict[str, Any],
    profile: dict[str, Any],
    model: dict[str, Any],
    ansi_share: float = 0.8,
    adaptive_share: float = 0.5,
    shuffle_partitions: tuple[int, ...] = (1, 2, 4),
) -> Case:
    """A case whose materialization, ANSI mode, fetch mode, AQE and shuffle partitions are drawn
    from `rng`, in that order (a seed draws the same cases as before)."""
    return Case(
        seed,
        index,
        query,
        stats,
        profile,
        model,
        inputs.random_materialization(rng),
        rng.random() < ansi_share,
        inputs.random_fetch_mode(rng),
        adaptive=rng.random() < adaptive_share,
        shuffle_partitions=rng.choice(shuffle_partitions),
    )


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    text = re.sub(r"\s+", " ", text.split("\n\n")[0])
    return f"{type(error).__name__}: {text[:400]}"


def _collect(spark, sql: str):
    frame = spark.sql(sql)
    rows = frame.collect()
    types = [f.dataType.simpleString() for f in frame.schema.fields]
    return frame.columns, types, [tuple(r) for r in rows]


class QueryTimeout(Exception):
    pass


def _attempt(spark, sql: str, timeout: float = QUERY_TIMEOUT_SECONDS):
    """((column names, types, rows), None), or ((None, None, None), the error). The query's jobs
    are cancelled after `timeout` seconds (a QueryTimeout)."""
    context = spark.sparkContext
    group = f"fuzz-{threading.get_ident()}-{time.perf_counter_ns()}"
    context.setJobGroup(group, "hiveopt fuzz", interruptOnCancel=True)
    timer = threading.Timer(timeout, context.cancelJobGroup, args=(group,))
    timer.start()
    started = time.perf_counter()
    try:
        return _collect(spark, sql), None
    except Exception as error:
        if time.perf_counter() - started >= timeout:
            return (None, None, None), QueryTimeout(f"cancelled after {timeout:.0f} s")
        return (None, None, None), error
    finally:
        timer.cancel()


class Runner:
    """Runs cases on one SparkSession (the caller's), with the fuzzer's tables written to it."""

    def __init__(self, spark, data: FuzzData, run_unchanged: bool = True, codegen: bool = False, parallel: bool = True):
        self.spark, self.data = spark, data
        self.run_unchanged = run_unchanged
        self.schema, self.partitioning = data.schema(), data.partitioning()
        self._pool = ThreadPoolExecutor(max_workers=2 if parallel else 1, thread_name_prefix="fuzz-spark")
        self._saved: dict[str, str | None] = {}
        settings = {
            "spark.sql.ansi.enabled": None,
            "spark.sql.adaptive.enabled": None,
            "spark.sql.shuffle.partitions": None,
        }
        if not codegen:
            # Interpreted evaluation: the same results, without compiling code for every new plan
            # (which costs more than running these small queries).
            settings.update({"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"})
        for key, value in settings.items():
            self._saved[key] = spark.conf.get(key, None)
            if value is not None:
                spark.conf.set(key, value)
        # PySpark logs every failing query's stack trace at ERROR: the outcomes say it in one line.
        from pyspark.logger import PySparkLogger

        self._loggers = {
            name: PySparkLogger.getLogger(name) for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
        }
        self._levels = {name: logger.level for name, logger in self._loggers.items()}
        for logger in self._loggers.values():
            logger.setLevel(logging.CRITICAL + 10)

    def close(self) -> None:
        """Give the session its settings (and PySpark's loggers their levels) back."""
        self._pool.shutdown(wait=True)
        for name, logger in self._loggers.items():
            logger.setLevel(self._levels[name])
        for key, value in self._saved.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)

    # -- one case ---------------------------------------------------------------------------
    def optimize_case(self, case: Case, outcome: Outcome):
        """The adapter's path: config, statistics, prepare, the fetch pre-pass, optimize."""
        config, statistics = self.inputs(case)
        sql = case.query.sql
        try:
            prepared = prepare_query(sql, self.schema, parsed=parse_query(sql), names_later=True)
        except Exception:
            prepared = None
        fetched: dict[str, FetchedValues] = {}
        if prepared is not None and config.prune_fetch_values and case.fetch_mode != "none":
            fetches = value_fetches(
                prepared.expression, self.schema, statistics, config, case.materialization, self.partitioning
            )
            for fetch in fetches:
                outcome.fetch_sql.append(fetch.values_query.sql(DIALECT))
                if case.fetch_mode == "fail":

                    def run(_sql):
                        raise TimeoutError("timed out after 20.0s (simulated)")
                else:

                    def run(query_sql):
                        return [tuple(row) for row in self.spark.sql(query_sql).collect()]

                fetched[fetch.key] = fetch_small_side_values(fetch, config.prune_max_values, run)
        outcome.fetched = {k: dict(values=v.values, low=v.low, high=v.high, error=v.error) for k, v in fetched.items()}
        context = OptimizerContext(
            schema=self.schema,
            statistics=statistics,
            config=config,
            model=f"case {case.index}",
            materialization=case.materialization,
            partitioning=self.partitioning,
            fetched_values=fetched,
            # As the adapter does: once a rule rewrote the query, Spark says how it names the
            # output expressions without an alias.
            spark_output_names=lambda: [str(row[0]) for row in self.spark.sql(f"DESCRIBE QUERY {sql}").collect()],
        )
        return optimize(sql, context, prepared)

    def optimize_only(self, case: Case):
        """The optimizer's result for the case (its fetch pre-pass runs on Spark), no comparison."""
        for key, value in case.spark_settings().items():
            self.spark.conf.set(key, value)
        return self.optimize_case(case, Outcome(case, "unchanged"))

    @staticmethod
    def inputs(case: Case):
        """(config, statistics) as the adapter has them: the profile must be valid (dbt debug
        refuses it otherwise: ConfigError), a bad model setting is ignored; a table whose
        statistics payload does not parse is absent, as the statistics store skips it."""
        config = OptimizerConfig.from_dicts(case.profile, case.model)
        statistics = StatsCatalog()
        for name, payload in case.stats.items():
            try:
                statistics.put(name, TableStats.from_dict(payload))
            except StatisticsError:
                continue
        return config, statistics

    def run_case(self, case: Case) -> Outcome:
        outcome = Outcome(case, "unchanged")
        started = time.perf_counter()
        try:
            self.inputs(case)
        except Exception as error:  # the profile's own validation
            outcome.kind, outcome.error = "inputs_rejected", _first_line(error)
            return outcome
        for key, value in case.spark_settings().items():
            self.spark.conf.set(key, value)
        try:
            result = self.optimize_case(case, outcome)
        except Exception as error:
            outcome.kind, outcome.error = "optimizer_raised", _first_line(error)
            outcome.detail = traceback.format_exc(limit=-6)
            outcome.seconds["optimize"] = time.perf_counter() - started
            return outcome
        outcome.seconds["optimize"] = time.perf_counter() - started
        outcome.optimized_sql, outcome.changed = result.sql, result.changed
        outcome.fallback, outcome.switched_off = result.fallback_reason, result.switched_off
        outcome.fired = result.fired_rules
        outcome.rule_errors = [f"{r.rule}: {r.error}" for r in result.rules if r.error]
        outcome.decisions = [d.to_dict() for r in result.rules for d in r.decisions if d.fired]
        sql = case.query.sql
        if not case.query.deterministic:

            def calls(text: str) -> int:
                return len(re.findall(r"\brand\s*\(", text, flags=re.I))

            outcome.kind = "skipped"
            if result.changed and calls(result.sql) > calls(sql):
                outcome.kind = "nondeterministic_duplicated"
                outcome.error = (
                    f"rand() called {calls(sql)} times in the original, {calls(result.sql)} in the optimized SQL"
                )
            drawn = [f for f in outcome.fetch_sql if calls(f) or re.search(r"\btablesample\b", f, flags=re.I)]
            if drawn:
                outcome.kind = "nondeterministic_fetched"
                outcome.error = f"the pre-pass fetched keys from a non-deterministic small side: {drawn[0]}"
            return outcome
        if not result.changed and not self.run_unchanged:
            return outcome
        ran = time.perf_counter()
        # The two queries run side by side (one session, two jobs): the driver plans one while
        # the executors run the other.
        futures = [
            self._pool.submit(_attempt, self.spark, text) for text in ([sql, result.sql] if result.changed else [sql])
        ]
        (names, types, rows), error = futures[0].result()
        optimized = futures[1].result() if result.changed else None
        outcome.seconds["spark"] = time.perf_counter() - ran
        if error is not None:
            outcome.kind = "original_timeout" if isinstance(error, QueryTimeout) else "original_error"
            outcome.error = _first_line(error)
            return outcome
        outcome.original_ran, outcome.rows = True, len(rows)
        if optimized is None:
            return outcome
        (names2, types2, rows2), error = optimized
        if error is not None:
            outcome.kind = "optimized_timeout" if isinstance(error, QueryTimeout) else "optimized_error"
            outcome.error = _first_line(error)
            return outcome
        outcome.both_ran = True
        problems = []
        if names2 != names:
            problems.append(f"column names {names} -> {names2}")
        if types2 != types:
            problems.append(f"column types {types} -> {types2}")
        diff = compare_rows(rows, rows2)
        if not diff.equal:
            problems.append(
                f"rows: {len(diff.only_original)} only in the original, {len(diff.only_optimized)} only in "
                f"the optimized result (of {len(rows)} and {len(rows2)})"
            )
        outcome.kind = "mismatch" if problems else "same"
        outcome.detail = "; ".join(problems) or None
        outcome.diff = diff
        return outcome


# -- a run ----------------------------------------------------------------------------------------
@dataclass
class Summary:
    queries: int = 0
    original_ran: int = 0
    changed: int = 0
    both_ran: int = 0
    kinds: Counter = field(default_factory=Counter)
    shapes: Counter = field(default_factory=Counter)
    fired: Counter = field(default_factory=Counter)
    fired_by_shape: dict[str, Counter] = field(default_factory=dict)
    fallbacks: Counter = field(default_factory=Counter)
    rule_errors: Counter = field(default_factory=Counter)
    switched_off: int = 0
    big_results: int = 0
    original_errors: list[Outcome] = field(default_factory=list)
    failures: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    phase_seconds: Counter = field(default_factory=Counter)

    def add(self, outcome: Outcome) -> None:
        self.queries += 1
        self.kinds[outcome.kind] += 1
        self.shapes[outcome.case.query.shape] += 1
        self.original_ran += outcome.original_ran
        self.changed += outcome.changed
        self.both_ran += outcome.both_ran
        self.big_results += outcome.rows > BIG_RESULT_ROWS
        for rule in outcome.fired:
            self.fired[rule] += 1
            self.fired_by_shape.setdefault(rule, Counter())[outcome.case.query.shape] += 1
        if outcome.switched_off:
            self.switched_off += 1
        elif outcome.fallback:
            self.fallbacks[fallback_prefix(outcome.fallback)] += 1
        for error in outcome.rule_errors:
            self.rule_errors[fallback_prefix(error)] += 1
        if outcome.kind == "original_error":
            self.original_errors.append(outcome)
        if outcome.failed:
            self.failures.append(outcome)
        for phase, seconds in outcome.seconds.items():
            self.phase_seconds[phase] += seconds

    def quiet_rules(self) -> list[str]:
        return [r for r in REWRITING_RULES if self.fired[r] < MIN_FIRE_SHARE * max(self.queries, 1)]

    def lines(self) -> list[str]:
        q = max(self.queries, 1)
        out = [
            f"queries: {self.queries}",
            f"original ran: {self.original_ran}",
            f"changed by the optimizer: {self.changed} ({self.changed / q:.0%})",
            f"executed both ways: {self.both_ran}",
            f"mismatches: {self.kinds['mismatch']}",
            f"optimized-only Spark errors: {self.kinds['optimized_error']}",
            f"optimizer exceptions (would fail the dbt run): {self.kinds['optimizer_raised']}",
            f"rand() duplicated: {self.kinds['nondeterministic_duplicated']}",
            f"keys fetched from a non-deterministic side: {self.kinds['nondeterministic_fetched']}",
            f"optimized-only timeouts ({QUERY_TIMEOUT_SECONDS:.0f} s): {self.kinds['optimized_timeout']}",
            f"original errors (generator bugs): {self.kinds['original_error']} (and "
            f"{self.kinds['original_timeout']} timeouts)",
            f"profiles rejected by config validation: {self.kinds['inputs_rejected']}",
            f"results over {BIG_RESULT_ROWS} rows: {self.big_results}",
            f"switched off by config: {self.switched_off}",
            f"fallbacks: {sum(self.fallbacks.values())}",
        ]
        out += [f"  {n:5d}  {reason}" for reason, n in self.fallbacks.most_common()]
        out.append(f"rule errors (that rule skipped, the others kept): {sum(self.rule_errors.values())}")
        out += [f"  {n:5d}  {reason}" for reason, n in self.rule_errors.most_common()]
        out.append("rules fired (queries, share of all queries; by shape):")
        for rule in RULE_NAMES:
            shapes = ", ".join(f"{s} {n}" for s, n in (self.fired_by_shape.get(rule) or Counter()).most_common())
            out.append(f"  {rule:36s} {self.fired[rule]:5d}  {self.fired[rule] / q:6.1%}  ({shapes or '-'})")
        out.append("shapes: " + ", ".join(f"{s} {n}" for s, n in self.shapes.most_common()))
        per = self.seconds / q
        phases = ", ".join(f"{p} {s / q * 1000:.0f} ms" for p, s in sorted(self.phase_seconds.items()))
        out.append(f"time: {self.seconds:.1f} s, {per * 1000:.0f} ms per query ({phases})")
        for rule in self.quiet_rules():
            out.append(f"WARNING: {rule} fired on {self.fired[rule] / q:.1%} of the queries (< {MIN_FIRE_SHARE:.0%})")
        return out


def fallback_prefix(reason: str) -> str:
    """A fallback reason without its specifics (the first clause)."""
    head = re.split(r"[:(]", reason, maxsplit=1)[0].strip()
    return head[:80]


def run(
    spark,
    data: FuzzData,
    queries: int,
    seed: int,
    on_failure: Callable[[Outcome], None] | None = None,
    run_unchanged: bool = True,
    progress_every: int = 200,
    progress=sys.stderr,
    start: int = 0,
) -> Summary:
    from fuzz.tables import create_tables

    create_tables(spark, data)
    runner = Runner(spark, data, run_unchanged=run_unchanged)
    summary = Summary()
    started = time.perf_counter()
    try:
        for index in range(start, start + queries):
            case = make_case(data, seed, index)
            outcome = runner.run_case(case)
            summary.add(outcome)
            if outcome.failed and on_failure is not None:
                on_failure(outcome)
            done = index - start + 1
            if progress is not None and progress_every and done % progress_every == 0:
                elapsed = time.perf_counter() - started
                print(
                    f"[fuzz] {done}/{queries} queries, {elapsed:.0f} s, {len(summary.failures)} failures, "
                    f"{summary.kinds['original_error']} original errors",
                    file=progress,
                    flush=True,
                )
    finally:
        summary.seconds = time.perf_counter() - started
        runner.close()
    return summary


def write_finding(folder: str, record: dict[str, Any]) -> str:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"seed{record['case']['seed']}-case{record['case']['index']}-{record['kind']}.json")
    with open(path, "w") as handle:
        json.dump(record, handle, indent=2, default=str, ensure_ascii=False)
    return path
