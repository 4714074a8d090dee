"""What the benchmark scripts share: TPC-H data, one warm SparkSession, dbt invoked in-process
for each variant (plain dbt-spark and hiveopt), alternating order, per-model timings from dbt's
run_results.json, and the rows each variant produced."""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
from collections.abc import Callable

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
EXAMPLE = os.path.join(REPO, "integration_tests")
RESULTS = os.path.join(REPO, "bench", "results")
CODEGEN_CACHE_ENTRIES = "5000"


def tpch_data(scale: str) -> str:
    """TPC-H at `scale` as Parquet (generated once), its folder in HIVEOPT_TPCH_DIR for the example
    project's on-run-start hook, which registers the sources there."""
    data = os.path.join(REPO, "data", f"tpch-{scale}")
    subprocess.run(
        ["bash", os.path.join(EXAMPLE, "scripts", "generate_tpch.sh"), scale, data],
        check=True,
        env={**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]},
    )
    os.environ["HIVEOPT_TPCH_DIR"] = data
    return data


def tpch_schema(scale: str) -> str:
    """The schema the example project's on-run-start hook registers TPC-H at `scale` in.

    >>> tpch_schema("0.1")
    'tpch_sf0_1'
    """
    return f"tpch_sf{str(scale).replace('.', '_')}"


def prepare(scale: str):
    """TPC-H at `scale` (generated once), a SparkSession of the benchmark's own, and the vars."""
    tpch_data(scale)
    # The rule benchmarks measure the rewrites: each hiveopt build runs the optimized SQL (with
    # feedback on, a rewrite's second build runs the SQL as written; docs/feedback.md).
    os.environ.setdefault("HIVEOPT_FEEDBACK", "off")
    from pyspark.sql import SparkSession

    from dbt.adapters.hiveopt.connections import session_configs

    builder = SparkSession.builder.master("local[2]").appName("hiveopt-bench").enableHiveSupport()
    for key, value in {
        **session_configs(os.path.join(RESULTS, f"spark-sf{scale}")),
        "spark.ui.enabled": "false",
        "spark.driver.memory": "6g",
        "spark.sql.ansi.enabled": "false",
        # Generated code kept across the rounds' invocations, as a long-running server keeps it:
        # with Spark's 100 entries, each 40-model invocation generated ~500 classes anew and the JIT
        # compiled them on the same two cores (50-150 s of compilation in a 120-210 s invocation),
        # so a query's time depended on what ran before it. Both variants share the cache.
        "spark.sql.codegen.cache.maxEntries": CODEGEN_CACHE_ENTRIES,
    }.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark, {"bench": True, "tpch_schema": tpch_schema(scale)}


def session_for(target: str) -> None:
    """The shared session's settings as each side runs by itself: whether an INSERT keeps the
    table's size as hiveopt's embedded session says (connections.session_configs of the version
    installed), and for plain dbt-spark's session as Spark's default (off: a seed's INSERT then
    lists no files and writes no size)."""
    from dbt.adapters.hiveopt.connections import SIZES_KEPT_ON_INSERT, embedded_session, session_configs

    session = embedded_session()
    if session is not None:
        own = session_configs(RESULTS).get(SIZES_KEPT_ON_INSERT, "false")
        session.conf.set(SIZES_KEPT_ON_INSERT, "false" if target == "spark" else own)


def dbt(args: list[str], target_path: str, project_dir: str = EXAMPLE) -> dict[str, float]:
    """dbt with `args` on the project (the example project by default, its profiles beside it);
    the seconds of each node from run_results.json."""
    from dbt.cli.main import dbtRunner

    if "--target" in args:
        session_for(args[args.index("--target") + 1])

    result = dbtRunner().invoke(
        [
            *args,
            "--project-dir",
            project_dir,
            "--profiles-dir",
            project_dir,
            "--target-path",
            target_path,
            "--log-path",
            os.path.join(target_path, "logs"),
            "--quiet",
        ]
    )
    if not result.success:
        raise SystemExit(f"dbt {' '.join(args)} failed")
    with open(os.path.join(target_path, "run_results.json")) as handle:
        return {r["unique_id"].split(".")[-1]: r["execution_time"] for r in json.load(handle)["results"]}


def rows(spark, model: str, schema: str = "analytics_bench", digits: int = 10):
    """The model's rows, sorted; fractional numbers to `digits` significant digits, because a sum
    of doubles depends on the order Spark adds them in (a UNION ALL or another join order changes it)."""

    def value(v):
        return float(f"{float(v):.{digits}g}") if isinstance(v, float) or type(v).__name__ == "Decimal" else v

    return sorted((tuple(value(v) for v in r) for r in spark.table(f"{schema}.{model}").collect()), key=repr)


def round_order(variants, round_: int) -> list:
    """The order the variants run in, round by round: A B, B A, B A, A B, ... (ABBA): over any
    two consecutive pairs of rounds each variant runs first as often as last, so what running
    second gives (a warmer JVM, files in the page cache) does not favour one side, as plain
    alternation did with an odd number of rounds.

    >>> [round_order(["a", "b"], r) for r in range(4)]
    [['a', 'b'], ['b', 'a'], ['b', 'a'], ['a', 'b']]
    """
    order = list(variants)
    return order[::-1] if round_ % 4 in (1, 2) else order


def settle(spark) -> None:
    """A full garbage collection in Spark's JVM before a measured invocation: each starts from a
    heap without what the one before left (broadcast relations and shuffle files are freed by
    Spark's cleaner only once the JVM collects their handles)."""
    spark.sparkContext._jvm.System.gc()


def jvm_work_seconds(spark) -> tuple[float, float]:
    """(JIT compilation, garbage collection) seconds Spark's JVM has spent since it started. Both
    run on the cores the tasks run on: TPC-H SF 1, 40 models, threads 1, local[2], the JIT took
    10.7 s during the first invocation after the setup build and 1.0-3.6 s during later ones."""
    management = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    compiled = management.getCompilationMXBean().getTotalCompilationTime()
    collected = sum(bean.getCollectionTime() for bean in management.getGarbageCollectorMXBeans())
    return compiled / 1000, collected / 1000


def measure_rounds(
    spark,
    select: list[str],
    models: list[str],
    variants: dict[str, tuple[str, dict]],
    common: dict,
    rounds: int,
    dbt_args: list[str] | None = None,
    after: Callable[[str, int], None] | None = None,
    warmup: int = 0,
    jvm_work: dict[str, list[tuple[float, float]]] | None = None,
) -> tuple[dict[str, dict[str, list[float]]], dict[str, dict[str, bool]]]:
    """Seconds per variant, model and round (variants alternate their order each round), and
    whether each variant's rows equal the first's. `dbt_args` go to every `dbt run` (e.g.
    `--threads 1`); `after(variant, round)` is called after each run (to read its records). The
    variants run in ABBA order (`round_order`), each after a full GC (`settle`). `warmup` untimed
    rounds run first (each variant once, no `after`): the JIT compiles what the measured rounds
    will run, which a setup build by one variant did only for its own SQL. `jvm_work`, if given,
    gets per variant and measured round the (JIT, GC) seconds its invocation spent
    (`jvm_work_seconds`)."""

    def run(variant: str) -> dict[str, float]:
        """One dbt run of the variant: dbt's seconds per model."""
        target, extra = variants[variant]
        return dbt(
            ["run", "--select", *select, "--target", target, "--vars", json.dumps({**common, **extra})]
            + (dbt_args or []),
            os.path.join(RESULTS, variant.replace(" ", "_")),
        )

    for _ in range(warmup):
        for variant in variants:
            settle(spark)
            run(variant)
        print("warm-up round done", flush=True)
    times: dict[str, dict[str, list[float]]] = {v: {m: [] for m in models} for v in variants}
    answers: dict[str, dict[str, list]] = {v: {} for v in variants}
    order = list(variants)
    for round_ in range(rounds):
        for variant in round_order(order, round_):
            settle(spark)
            before = jvm_work_seconds(spark)
            measured = run(variant)
            if jvm_work is not None:
                spent = jvm_work_seconds(spark)
                jvm_work.setdefault(variant, []).append((spent[0] - before[0], spent[1] - before[1]))
            for model in models:
                times[variant][model].append(measured[model])
                answers[variant][model] = rows(spark, model)
            if after is not None:
                after(variant, round_)
        print(f"round {round_ + 1}/{rounds} done", flush=True)
    first = order[0]
    same = {v: {m: answers[v][m] == answers[first][m] for m in models} for v in variants}
    return times, same


def measure(
    spark, select: list[str], models: list[str], variants: dict[str, tuple[str, dict]], common: dict, rounds: int
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, bool]]]:
    """Median seconds per variant and model, and whether each variant's rows equal the first's."""
    times, same = measure_rounds(spark, select, models, variants, common, rounds)
    return {v: {m: statistics.median(ts) for m, ts in by_model.items()} for v, by_model in times.items()}, same


def paired_ratios(times: dict[str, dict[str, list[float]]], base: str, other: str, model: str) -> list[float]:
    """base's seconds / other's, round by round: each round's two runs met the same machine load.

    >>> paired_ratios({"a": {"m": [2.0, 3.0]}, "b": {"m": [1.0, 2.0]}}, "a", "b", "m")
    [2.0, 1.5]
    """
    return [b / o for b, o in zip(times[base][model], times[other][model])]


def median_interval(ratios: list[float], level: float = 0.95, draws: int = 4000) -> tuple[float, float]:
    """The range the median of `ratios` lands in, `level` of the time, when the rounds are drawn
    again (a bootstrap, seeded: the same ratios print the same range): what a per-model ratio of a
    few rounds can tell apart. On this machine the CTAS of TPC-H q11, the same SQL on both sides,
    9 paired rounds (2026-11-30): median 0.89x, range 0.60-1.27x.

    >>> median_interval([1.0, 1.0, 1.0])
    (1.0, 1.0)
    >>> low, high = median_interval([0.8, 0.9, 1.0, 1.1, 1.2]); low < 1.0 < high
    True
    """
    draw = random.Random(1)
    medians = sorted(statistics.median(draw.choices(ratios, k=len(ratios))) for _ in range(draws))
    cut = int(draws * (1 - level) / 2)
    return medians[cut], medians[draws - 1 - cut]


def record(variant: str, model: str) -> dict:
    with open(os.path.join(RESULTS, variant.replace(" ", "_"), "hiveopt", f"{model}.json")) as handle:
        return json.load(handle)


def decision_kinds(rec: dict | None) -> list[str]:
    """The kinds of decision in effect in a model's hiveopt record: each rule that fired on it,
    select_join_algorithms (and any rule whose decisions carry a hint) split by hint, in the
    pipeline's order, once each. A rule that failed counts for nothing (its rewrite was discarded),
    nor does a model that fell back.

    >>> decision_kinds({"rules": [
    ...     {"rule": "reorder_joins", "fired": True, "decisions": [{"fired": True}]},
    ...     {"rule": "rewrite_skew_joins", "fired": False, "decisions": [{"fired": False}]},
    ...     {"rule": "select_join_algorithms", "fired": True, "decisions": [
    ...         {"fired": True, "hint": "BROADCAST"}, {"fired": True, "hint": "BROADCAST"},
    ...         {"fired": False}, {"fired": True, "hint": "SHUFFLE_HASH"}]}]})
    ['reorder_joins', 'select_join_algorithms BROADCAST', 'select_join_algorithms SHUFFLE_HASH']
    """
    if not rec or rec.get("fallback_reason"):
        return []
    kinds: list[str] = []
    for run in rec.get("rules") or []:
        decisions = [d for d in run.get("decisions") or [] if d.get("fired")]
        if run.get("error") or not run.get("fired", bool(decisions)):
            continue
        for d in decisions:
            kind = f"{run['rule']} {d['hint']}" if d.get("hint") else run["rule"]
            if kind not in kinds:
                kinds.append(kind)
    return kinds


def statistics_service(spark):
    """The statistics store the example project's session target uses (schema hiveopt), on the
    benchmark's own session."""
    from dbt.adapters.hiveopt.statistics_service import StatisticsService

    return StatisticsService(lambda sql: [tuple(r) for r in spark.sql(sql).collect()])
