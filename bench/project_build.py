"""Whole-project benchmark: `dbt build --full-refresh` of the example project (seeds, staging
views, an ephemeral model, table and incremental marts, tests; threads 4) by plain dbt-spark and
by hiveopt in the same process and warm SparkSession, alternating which goes first, paired per
round. Prints per round and as medians: dbt's wall time of the invocation, the seconds of all
models and seeds, and the seconds of the models where no rule fires (the pass-through, which
must cost nothing), with paired ratios and the range each ratio's median lands in 95% of the time
with the rounds drawn again; on the embedded session also the CPU seconds each build cost this
process and its JVM (what the build took from the two cores); the first hiveopt build's
statistics-gathering cost against its build; whether the marts' rows are equal; hiveopt's closing
line. `--control` runs plain dbt-spark against itself in the same rounds instead: how far two
builds of the same SQL land apart on this machine (the floor under any per-model target).

    .venv/bin/python bench/project_build.py --scale 0.1 --rounds 3
    .venv/bin/python bench/project_build.py --scale 0.1 --rounds 3 --control
    .venv/bin/python bench/project_build.py --scale 0.1 --rounds 4 --switched-off
    .venv/bin/python bench/project_build.py --scale 0.1 --rounds 6 --thrift
    .venv/bin/python bench/project_build.py --scale 0.1 --rounds 3 --fresh-jvm --later-rounds 3
    .venv/bin/python bench/project_build.py --scale 0.1 --rounds 3 --fresh-jvm --first-pass behind
    .venv/bin/python bench/project_build.py --scale 0.1 --rounds 1 --fresh-jvm --later-rounds 3 --sources-changed
    .venv/bin/python bench/project_build.py --scale 1 --rounds 1 --fresh-jvm --later-rounds 3 --sources-changed \
        --keep-within-size 1

`--switched-off` adds a third side to the rounds: hiveopt with its optimizer switched off (what the
adapter's glue costs; it showed the ~1 s that every warm build spent after its last model).
`--thrift` runs both sides over Thrift (dbt-spark's `thrift` method against hiveopt's) to a local
standalone cluster the script starts from the pyspark package on free ports (two workers of one
core, one SQL server) and stops by pid at the end: hiveopt's own statements cross the network there.
`--fresh-jvm` runs every build in a process of its own, as each `dbt build` on the embedded session
runs (its JVM starts and ends with the invocation): first builds paired per round, each over an
empty warehouse (hiveopt: no statistics; what `make demo` does on a new machine), then with
`--later-rounds` later builds over the last ones' folders. On a new JVM the first Spark job to read
the sources pays the JVM's warm-up (parsing, class loading, JIT), whoever runs it: hiveopt's
statistics pass, or dbt-spark's first models. The paired wall says what a first build costs in
all, which the pass's own seconds cannot. `--sources-changed` registers the sources again before
each later build (a new creation time in the catalog, the same files): the daily case, where new
data makes hiveopt's statistics stale: hiveopt keeps them (`stats.keep_within_size`, default 1.1),
as after a load that changed a source's size by less than 10% (the files here are the same: a
ratio of sizes of 1), and with `--keep-within-size 1` its build gathers them again.
`--first-pass behind` sets hiveopt's `stats.first_pass: behind`: a build whose sources lack
statistics runs the models that need them as written while the pass runs beside them, instead of
making them wait for it.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

from dbt.adapters.hiveopt.statistics_share import StatisticsShare, statistics_share  # noqa: E402

VARIANTS = {"dbt-spark": "spark", "hiveopt": "session"}
# --fresh-jvm --first-pass both: a third side, hiveopt with stats.first_pass: behind.
BEHIND = "hiveopt_behind"
# --control: the second side is dbt-spark again (its own folder, the same target).
CONTROL = {"dbt-spark": "spark", "dbt-spark_again": "spark"}
# --switched-off: a third side, hiveopt with its optimizer switched off (the adapter's glue alone:
# its materializations, seeds' statistics, saves, the run's closing line).
SWITCHED_OFF = "hiveopt_switched_off"
MARTS = [
    "revenue_by_nation",
    "brand_revenue",
    "big_order_customers",
    "small_quantity_revenue",
    "daily_revenue",
    "customer_orders",
]


def build(target: str, variant: str, common: dict, label: str) -> dict:
    """One `dbt build --full-refresh`; dbt's timings and, for hiveopt, the optimizer's records."""
    from dbt.cli.main import dbtRunner

    path = os.path.join(harness.RESULTS, "project", variant, label)
    harness.session_for(target)
    cpu_before = cpu_seconds()
    result = dbtRunner().invoke(
        [
            "build",
            "--full-refresh",
            "--target",
            target,
            "--vars",
            json.dumps(common),
            "--project-dir",
            harness.EXAMPLE,
            "--profiles-dir",
            harness.EXAMPLE,
            "--target-path",
            path,
            "--log-path",
            os.path.join(path, "logs"),
            "--quiet",
        ]
    )
    if not result.success:
        raise SystemExit(f"dbt build --target {target} failed")
    with open(os.path.join(path, "run_results.json")) as handle:
        results = json.load(handle)
    nodes = {r["unique_id"]: r["execution_time"] for r in results["results"]}
    records = {}
    for file in glob.glob(os.path.join(path, "hiveopt", "*.json")):
        with open(file) as handle:
            records[os.path.basename(file)[:-5]] = json.load(handle)
    cpu_after = cpu_seconds()
    cpu = None if cpu_before is None or cpu_after is None else [a - b for a, b in zip(cpu_after, cpu_before)]
    return {"wall": results["elapsed_time"], "nodes": nodes, "records": records, "cpu": cpu}


def cpu_seconds() -> tuple[float, float] | None:
    """The CPU seconds (user + system, every thread) used so far by this process (dbt, the adapter)
    and by the embedded session's JVM, its child: what a build took from the two cores. The JVM's
    JIT and garbage collection threads count too, so a build's figure moves from round to round
    nearly as much as its wall time (0.82-1.41x per round, 2026-11-30). None without an embedded
    session (over Thrift the JVMs are the cluster's)."""
    from dbt.adapters.hiveopt.connections import embedded_session

    session = embedded_session()
    process = getattr(getattr(getattr(session, "sparkContext", None), "_gateway", None), "proc", None)
    if process is None:
        return None
    try:
        with open(f"/proc/{process.pid}/stat") as handle:
            # Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
            fields = handle.read().rsplit(")", 1)[1].split()
        jvm = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None
    return sum(os.times()[:2]), jvm


def model_seconds(run: dict, names=None) -> float:
    return sum(
        t
        for uid, t in run["nodes"].items()
        if uid.split(".")[0] in ("model", "seed") and (names is None or uid.split(".")[-1] in names)
    )


def gathering(run: dict) -> StatisticsShare:
    """The run's statistics gathering against its building (statistics_share.py: the models' waits
    for the first pass count as neither)."""
    return statistics_share(run["records"].values(), model_seconds(run))


def marts(fetch) -> dict[str, list]:
    """Each mart's rows, sorted, numbers to 10 digits; `fetch(sql)` runs a query where the builds ran."""
    return {
        m: sorted(
            (
                tuple(f"{v:.10g}" if isinstance(v, float) or type(v).__name__ == "Decimal" else v for v in r)
                for r in fetch(f"SELECT * FROM analytics.{m}")
            ),
            key=repr,
        )
        for m in MARTS
    }


def session_fetch(spark):
    return lambda sql: [tuple(r) for r in spark.sql(sql).collect()]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def paired(first: list[float], second: list[float]) -> list[float]:
    """Each round's first / second (a round whose second is 0 left out)."""
    return [a / b for a, b in zip(first, second) if b]


def paired_line(title: str, first: list[float], second: list[float], width: int = 40) -> str:
    """A figure's medians per side, their paired ratio, the range that ratio lands in 95% of the
    time with the rounds drawn again (harness.median_interval: what these rounds can tell apart)
    and each round's (first / second)."""
    ratios = paired(first, second)
    low, high = harness.median_interval(ratios) if ratios else (float("nan"), float("nan"))
    return (
        f"{title:{width}} {median(first):12.2f} {median(second):10.2f} {median(ratios):13.3f}  "
        f"({low:.3f}-{high:.3f})   rounds: {', '.join(f'{r:.3f}' for r in ratios)}"
    )


def rounds(settle, variants: dict[str, str], common: dict, count: int, rows=None) -> dict[str, list[dict]]:
    """`count` paired rounds of builds, the variants (folder -> dbt target) in ABBA order, `settle()`
    (a full garbage collection where the builds run) before each; `rows`, when given, is
    (fetch, dict): the dict gets each variant's marts after its build."""
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    for round_ in range(count):
        for variant in harness.round_order(list(variants), round_):
            settle()
            runs[variant].append(build(variants[variant], variant, common, f"round{round_ + 1}"))
            if rows is not None:
                rows[1][variant] = marts(rows[0])
        print(f"round {round_ + 1}/{count} done", flush=True)
    return runs


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="0.1")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--feedback",
        default="off",
        choices=("off", "explore"),
        help="hiveopt's feedback setting: off (every build runs the rewrites) or explore (a rewrite runs "
        "optimized on the first build, as written on the next, then the faster)",
    )
    parser.add_argument(
        "--warm-builds",
        type=int,
        default=0,
        help="untimed hiveopt builds after the first one (with --feedback explore: two let every rewrite be "
        "measured both ways, and the rounds then run what feedback kept)",
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help="no hiveopt: dbt-spark against dbt-spark, the same rounds (how noisy two builds of the same SQL are)",
    )
    parser.add_argument(
        "--switched-off",
        action="store_true",
        help="a third side in the same rounds: hiveopt with its optimizer switched off (enabled: false), what the "
        "adapter costs where it optimizes nothing",
    )
    parser.add_argument(
        "--thrift",
        action="store_true",
        help="over Thrift: both sides (dbt-spark's thrift method and hiveopt's) build on a local standalone "
        "cluster (two workers of one core, one SQL server) that the script starts on free ports and stops",
    )
    parser.add_argument(
        "--fresh-jvm",
        action="store_true",
        help="every build in a process of its own (a new JVM): --rounds paired first builds over empty warehouses "
        "(no statistics: what a first `make demo` pays), then --later-rounds",
    )
    parser.add_argument(
        "--later-rounds",
        type=int,
        default=0,
        help="with --fresh-jvm: paired later builds after the first ones, a new JVM each, over the last first "
        "builds' warehouses (hiveopt's statistics stored)",
    )
    parser.add_argument(
        "--sources-changed",
        action="store_true",
        help="with --fresh-jvm --later-rounds: before each later build the TPC-H source tables are dropped (they "
        "are external: the files stay) and the project's on-run-start hook registers them again, so their "
        "catalog creation time is new: hiveopt's statistics of them are stale and gathered again, as after a "
        "daily load of the sources (both sides pay the drop; it is not timed)",
    )
    parser.add_argument(
        "--keep-within-size",
        default="1.1",
        help="hiveopt's stats.keep_within_size (default 1.1; 1: off): with --sources-changed, statistics of a "
        "source whose size changed less than this factor are kept, scaled, not gathered again",
    )
    parser.add_argument(
        "--first-pass",
        choices=("wait", "behind", "both"),
        default="wait",
        help="hiveopt's stats.first_pass: `wait` (the default) makes the models that need the invocation's first "
        "statistics pass wait for it; `behind` runs them as written while it runs beside them; `both` (with "
        "--fresh-jvm, first builds only): a third side in the same rounds, hiveopt with `behind`",
    )
    parser.add_argument(
        "--no-class-archive",
        action="store_true",
        help="with --fresh-jvm: hiveopt's JVM starts without its class archive too (profile `class_archive: "
        "false`), as dbt-spark's does: the adapters' work alone",
    )
    parser.add_argument("--child", choices=(*VARIANTS, BEHIND), help=argparse.SUPPRESS)
    parser.add_argument("--child-dir", help=argparse.SUPPRESS)
    parser.add_argument("--label", default="build", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return fresh_child(args)
    if args.sources_changed and not (args.fresh_jvm and args.later_rounds):
        raise SystemExit("--sources-changed changes the sources before the later builds of --fresh-jvm --later-rounds")
    if args.first_pass == "both" and not (args.fresh_jvm and not args.later_rounds):
        raise SystemExit("--first-pass both compares first builds: with --fresh-jvm, without --later-rounds")
    if args.fresh_jvm:
        if args.thrift or args.control or args.switched_off:
            raise SystemExit("--fresh-jvm runs dbt-spark against hiveopt on the embedded session only")
        return fresh_jvm(args)
    if args.control:
        return control(args)
    os.environ["HIVEOPT_FEEDBACK"] = args.feedback
    os.environ["HIVEOPT_FIRST_PASS"] = args.first_pass
    if args.thrift:
        if args.switched_off:
            raise SystemExit("--switched-off runs on the embedded session only")
        return on_thrift(args)
    spark, common = harness.prepare(args.scale)
    common = {"tpch_schema": common["tpch_schema"]}  # the project as it is, no benchmark models
    fetch = session_fetch(spark)
    variants = {**VARIANTS, SWITCHED_OFF: "session_off"} if args.switched_off else VARIANTS
    return measure(args, common, fetch, lambda: harness.settle(spark), variants, "the embedded session")


def on_thrift(args) -> int:
    """The same benchmark over Thrift, on a cluster of its own, stopped by pid at the end (also on
    an error or Ctrl-C)."""
    import subprocess
    import tempfile

    from pyhive import hive

    from dbt.adapters.hiveopt import local_cluster

    harness.tpch_data(args.scale)
    spec = local_cluster.ClusterSpec(tempfile.mkdtemp(prefix="hiveopt-bench-cluster-"))
    cluster = local_cluster.up(spec, progress=lambda line: print(line, flush=True))
    try:
        os.environ["HIVEOPT_THRIFT_HOST"] = "127.0.0.1"
        os.environ["HIVEOPT_THRIFT_PORT"] = str(cluster.spec.thrift_port)

        def fetch(sql):  # a session of its own each time: a long-lived one keeps rebuilt tables' old files
            with hive.connect(host="127.0.0.1", port=cluster.spec.thrift_port, username="dbt") as connection:
                cursor = connection.cursor()
                cursor.execute(sql)
                return cursor.fetchall() if cursor.description else []

        (server,) = [d for d in cluster.daemons if d.name == "sql-server"]

        def settle():  # the SQL server's JVM, as harness.settle does the embedded session's
            try:
                subprocess.run(["jcmd", str(server.pid), "GC.run"], capture_output=True, check=False)
            except OSError:  # a JRE without jcmd: the rounds' ABBA order is all the fairness left
                pass

        tpch = harness.tpch_schema(args.scale)
        variants = {"dbt-spark": "spark_thrift", "hiveopt": "thrift"}
        return measure(args, {"tpch_schema": tpch}, fetch, settle, variants, "Thrift to a local cluster")
    finally:
        cluster.stop()


def measure(args, common: dict, fetch, settle, variants: dict[str, str], where: str) -> int:
    """A dbt-spark build to warm up, the first hiveopt build (statistics gathered), `--warm-builds`,
    then the paired rounds; prints the figures."""
    spark_target, hiveopt_target = variants["dbt-spark"], variants["hiveopt"]
    # A dbt-spark build first warms the JVM and the file cache (not counted); then the first hiveopt
    # build reads the sources for the first time and gathers their statistics.
    build(spark_target, "dbt-spark", common, "warmup")
    fetch("DROP DATABASE IF EXISTS hiveopt CASCADE")
    first = build(hiveopt_target, "hiveopt", common, "first")
    share = gathering(first)
    print(
        f"TPC-H SF {args.scale}, threads 4, {where}. First hiveopt build (statistics gathered): "
        f"{first['wall']:.1f} s wall; {share.line()}",
        flush=True,
    )

    for warm in range(args.warm_builds):
        build(hiveopt_target, "hiveopt", common, f"warm{warm + 1}")
    if args.warm_builds:
        print(f"{args.warm_builds} untimed hiveopt builds (feedback {args.feedback})", flush=True)

    rows: dict[str, dict[str, list]] = {}
    runs = rounds(settle, variants, common, args.rounds, (fetch, rows))

    last = runs["hiveopt"][-1]["records"]
    unchanged = sorted(
        name for name, r in last.items() if "." not in name and not r.get("changed") and not r.get("fallback_reason")
    )
    optimized = sorted(name for name, r in last.items() if "." not in name and r.get("changed"))

    def figures(run: dict) -> dict[str, float]:
        return {
            "wall": run["wall"],
            "models": model_seconds(run),
            "unchanged": model_seconds(run, set(unchanged)),
            "cpu": None if run["cpu"] is None else sum(run["cpu"]),
            "cpu_python": None if run["cpu"] is None else run["cpu"][0],
        }

    table = {v: [figures(run) for run in runs[v]] for v in variants}
    later = median([run["wall"] for run in runs["hiveopt"]])
    print(
        f"first hiveopt build {first['wall']:.1f} s wall against {later:.1f} s for the later ones (median): "
        f"statistics cost {first['wall'] - later:.1f} s of wall once ({100 * (first['wall'] - later) / later:.0f}% "
        f"of a build)"
    )
    print()
    print(
        f"{'':40} {'dbt-spark s':>12} {'hiveopt s':>10} {'paired ratio':>13}  (95% range)  "
        "(spark/hiveopt, >1: hiveopt faster)"
    )
    lines = [
        ("hiveopt", "wall", "dbt build, wall"),
        ("hiveopt", "models", "all models and seeds"),
        ("hiveopt", "unchanged", f"models no rule rewrites ({len(unchanged)})"),
    ]
    if all(f["cpu"] is not None for fs in table.values() for f in fs):
        lines.append(("hiveopt", "cpu", "CPU seconds (Python and the JVM)"))
        lines.append(("hiveopt", "cpu_python", "  of which Python (dbt, the adapter)"))
    if args.switched_off:
        lines += [(SWITCHED_OFF, "wall", "switched off: wall"), (SWITCHED_OFF, "models", "switched off: models")]
        if all(f["cpu"] is not None for f in table[SWITCHED_OFF]):
            lines.append((SWITCHED_OFF, "cpu", "switched off: CPU seconds"))
    for variant, key, title in lines:
        print(paired_line(title, [f[key] for f in table["dbt-spark"]], [f[key] for f in table[variant]]))
    print()
    print(f"per model, medians (optimized: {', '.join(optimized)})")
    for name in sorted(
        {uid.split(".")[-1] for uid in runs["hiveopt"][-1]["nodes"] if uid.startswith(("model.", "seed."))}
    ):
        spark_s = [model_seconds(run, {name}) for run in runs["dbt-spark"]]
        ours = [model_seconds(run, {name}) for run in runs["hiveopt"]]
        ratios = paired(spark_s, ours)
        kind = "optimized" if name in optimized else ("no rule" if name in unchanged else "")
        ran = [(run["records"].get(name, {}).get("feedback") or {}).get("ran") for run in runs["hiveopt"]]
        if kind == "optimized" and any(ran):  # which SQL each round ran, as feedback chose
            kind += " (" + "/".join("o" if r == "original" else "r" for r in ran) + ")"
        print(f"  {name:30} {kind:16} {median(spark_s):8.2f} {median(ours):8.2f} {median(ratios):7.3f}")
    # What hiveopt itself added before each build (catalog reads, the optimizer, its record; not
    # statistics gathering, which these warm rounds do not pay): the pass-through's own cost.
    for kind, names in (("no rule rewrites", unchanged), ("optimized", optimized)):
        added = [
            float(run["records"][name]["overhead_ms"])
            for run in runs["hiveopt"]
            for name in names
            if run["records"].get(name, {}).get("overhead_ms") is not None
        ]
        if added:
            print(
                f"hiveopt's own time before the build, models {kind}: median {median(added):.1f} ms, "
                f"max {max(added):.1f} ms ({len(added)} builds)"
            )
    same = all(rows["hiveopt"][m] == rows["dbt-spark"][m] for m in MARTS)
    print(f"\nmarts' rows equal (last round): {'yes' if same else 'NO'}")
    return 0 if same else 1


def fresh_child(args) -> int:
    """One build in this new process: the embedded session as hiveopt starts it (local cores,
    Spark's default memory; its warehouse and metastore in --child-dir), used by the side's dbt;
    prints its figures as one JSON line."""
    from types import SimpleNamespace

    from dbt.adapters.hiveopt.connections import ensure_local_session

    harness.tpch_data(args.scale)
    # The adapter's own start of its session, over this build's folder; dbt-spark's side gets it too,
    # but not the class archive hiveopt's JVM starts from (class_archive.py): dbt-spark has none.
    archive = args.child != "dbt-spark" and not args.no_class_archive
    ensure_local_session(SimpleNamespace(spark_dir=args.child_dir, server_side_parameters={}, class_archive=archive))
    common = {"tpch_schema": harness.tpch_schema(args.scale)}
    if args.sources_changed:  # registered again by the build's on-run-start hook, with a new creation time
        from pyspark.sql import SparkSession

        spark, schema = SparkSession.builder.getOrCreate(), common["tpch_schema"]
        for row in spark.sql(f"SHOW TABLES IN {schema}").collect():
            spark.sql(f"DROP TABLE {schema}.{row.tableName}")  # external: the files stay
    run = build({**VARIANTS, BEHIND: "session"}[args.child], os.path.join("fresh", args.child), common, args.label)
    share = gathering(run)
    figures = {
        "wall": run["wall"],
        "models": model_seconds(run),
        "gathered": share.gathered,
        "building": share.building,
    }
    print("FIGURES " + json.dumps(figures), flush=True)
    return 0


def fresh_jvm(args) -> int:
    """Paired first builds, each side in a new process (fresh_child) with an empty folder, ABBA
    order; then, with --later-rounds, later builds in new processes too, over the last round's
    folders (hiveopt's statistics stored; `--warm-builds` untimed hiveopt builds first): what each
    `dbt build` on the embedded session pays, a JVM of its own every time."""
    import shutil

    harness.tpch_data(args.scale)
    variants = [*VARIANTS, BEHIND] if args.first_pass == "both" else list(VARIANTS)
    firsts: dict[str, list[dict]] = {v: [] for v in variants}
    folders = {v: os.path.join(harness.RESULTS, "project-fresh", v) for v in variants}
    for round_ in range(args.rounds):
        for variant in harness.round_order(variants, round_):
            shutil.rmtree(folders[variant], ignore_errors=True)
            os.makedirs(folders[variant])
            firsts[variant].append(_child_build(args, variant, folders[variant], f"first{round_ + 1}"))
        print(f"first builds, round {round_ + 1}/{args.rounds} done", flush=True)
    print(f"\nTPC-H SF {args.scale}, threads 4, a new JVM for every build")
    print(
        f"{'':44} {'dbt-spark s':>12} {'hiveopt s':>10} {'paired ratio':>13}  (95% range)  "
        "(spark/hiveopt, >1: hiveopt faster)"
    )
    _fresh_lines("first builds (empty warehouse, no statistics)", firsts)
    sides = [("hiveopt", "hiveopt")]
    if BEHIND in firsts:
        _fresh_lines(
            "first builds, hiveopt with stats.first_pass: behind",
            {"dbt-spark": firsts["dbt-spark"], "hiveopt": firsts[BEHIND]},
        )
        sides.append(("hiveopt (behind)", BEHIND))
    for name, variant in sides:
        ours = firsts[variant]
        shares = [r["gathered"] / max(r["building"], 1e-9) for r in ours]
        listed = ", ".join(f"{100 * x:.0f}%" for x in shares)
        print(
            f"  {name}'s statistics in its first builds: {median([r['gathered'] for r in ours]):.1f} s (median), "
            f"{100 * median(shares):.0f}% of its building time (rounds: {listed})",
            flush=True,
        )
    if not args.later_rounds:
        return 0
    for warm in range(args.warm_builds):
        _child_build(args, "hiveopt", folders["hiveopt"], f"warm{warm + 1}")
    later: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    for round_ in range(args.later_rounds):
        for variant in harness.round_order(list(VARIANTS), round_):
            later[variant].append(
                _child_build(args, variant, folders[variant], f"later{round_ + 1}", args.sources_changed)
            )
        print(f"later builds, round {round_ + 1}/{args.later_rounds} done", flush=True)
    stored = "stale: the sources registered again before each" if args.sources_changed else "stored"
    if args.sources_changed and float(args.keep_within_size) > 1:
        stored += f", kept within {args.keep_within_size}x of their size"
    _fresh_lines(f"later builds (statistics {stored}; {args.warm_builds} untimed hiveopt builds before)", later)
    if args.sources_changed:
        gathered = [r["gathered"] for r in later["hiveopt"]]
        listed = ", ".join(f"{g:.1f}" for g in gathered)
        print(f"  hiveopt's statistics in these builds: {median(gathered):.1f} s (median; {listed})")
    return 0


def _child_build(args, variant: str, folder: str, label: str, sources_changed: bool = False) -> dict:
    """One build by `variant` in a new process over `folder` (fresh_child); its figures. With
    `sources_changed`, the sources are registered again first (--sources-changed)."""
    import subprocess

    changed = ["--sources-changed"] if sources_changed else []
    done = subprocess.run(
        [sys.executable, __file__, "--scale", args.scale, "--child", variant, "--child-dir", folder, "--label", label]
        + changed
        + (["--no-class-archive"] if args.no_class_archive else []),
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "HIVEOPT_FEEDBACK": args.feedback,
            "HIVEOPT_KEEP_WITHIN_SIZE": args.keep_within_size,
            "HIVEOPT_FIRST_PASS": "behind" if variant == BEHIND else args.first_pass.replace("both", "wait"),
        },
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("FIGURES ")]
    if done.returncode or not lines:
        raise SystemExit(f"{variant}'s build {label} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len("FIGURES ") :])


def _fresh_lines(title: str, runs: dict[str, list[dict]]) -> None:
    print(title)
    for key, what in (("wall", "dbt build, wall"), ("models", "all models and seeds")):
        first, second = [r[key] for r in runs["dbt-spark"]], [r[key] for r in runs["hiveopt"]]
        print(paired_line("  " + what, first, second, 44), flush=True)


def control(args) -> int:
    """dbt-spark against itself, paired per round as the real comparison is: the spread of the
    same statements run twice (per model: how many land past 1.05x either way)."""
    spark, common = harness.prepare(args.scale)
    common = {"tpch_schema": common["tpch_schema"]}
    build("spark", "dbt-spark", common, "warmup")
    runs = rounds(lambda: harness.settle(spark), CONTROL, common, args.rounds)
    first, second = (runs[v] for v in CONTROL)
    print(f"\nTPC-H SF {args.scale}, threads 4, control: dbt-spark / dbt-spark again (the same SQL both sides)")
    for title, of in (("dbt build, wall", lambda run: run["wall"]), ("all models and seeds", model_seconds)):
        ratios = paired([of(run) for run in first], [of(run) for run in second])
        print(f"{title:40} {median(ratios):7.3f}   rounds: {', '.join(f'{r:.3f}' for r in ratios)}")
    names = sorted({uid.split(".")[-1] for uid in first[-1]["nodes"] if uid.startswith(("model.", "seed."))})
    per_model = {}
    for name in names:
        ratios = paired([model_seconds(run, {name}) for run in first], [model_seconds(run, {name}) for run in second])
        per_model[name] = median(ratios)
        print(f"  {name:30} {per_model[name]:7.3f}")
    slower = sum(r < 1 / 1.05 for r in per_model.values())
    faster = sum(r > 1.05 for r in per_model.values())
    print(f"models and seeds past 1.05x: {slower} slower, {faster} faster, of {len(per_model)} (same SQL both sides)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
