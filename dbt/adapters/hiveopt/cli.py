"""The `hiveopt` console command: `hiveopt summary`, `hiveopt explain MODEL`, `hiveopt analyze NAME...`,
`hiveopt cluster up|status|down`.

Each command's one-line summary and its arguments' help are written once, in `build_parser`: the
top-level help and each command's `--help` show the same words (tests/unit/test_cli_help.py).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any

from dbt.adapters.hiveopt.statistics_share import model_statistics, statistics_share


def _estimate(value: Any) -> str:
    """An estimate record ({"value": .., "precision": ..} or {"rows": ..}) for people."""
    from dbt.adapters.hiveopt.optimizer.human import human_rows

    if not isinstance(value, dict):
        return str(value)
    rows = value.get("value", value.get("rows"))
    precision = value.get("precision", "")
    if precision == "absent" or rows is None:
        return "no statistics"
    return f"{human_rows(rows)} ({precision})"


def explain(model: str, project_dir: str) -> int:
    from dbt.adapters.hiveopt.optimizer.join_trees import render

    path = os.path.join(project_dir, "target", "hiveopt", f"{model}.json")
    if not os.path.exists(path):
        print(f"no record for {model} at {path}: run the model with a hiveopt profile first", file=sys.stderr)
        return 1
    with open(path) as handle:
        record = json.load(handle)
    print(
        f"model {model}: {'rewritten' if record.get('changed') else 'unchanged'}"
        f" in {record.get('optimizer_ms', 0):.1f} ms"
    )
    if record.get("worst_q_error") is not None:
        print(f"worst q-error of the estimates against Spark's actual rows: {record['worst_q_error']:.2f}")
    elif isinstance(record.get("actual_rows"), str) and record["actual_rows"].startswith("not available"):
        print(f"actual rows: {record['actual_rows']}")
    if record.get("fallback_reason"):
        print(f"not optimized: {record['fallback_reason']}")
    if record.get("unchanged_reason"):
        print(f"unchanged: {record['unchanged_reason']}")
    print("\n-- before (the SQL dbt compiled)\n" + record.get("original_sql", "").strip())
    if record.get("changed"):
        from dbt.adapters.hiveopt.optimizer.dialect import formatted

        # Laid out for reading: the optimizer writes its SQL on one line (the .sql file has it so).
        print("\n-- after (the SQL Spark ran, laid out)\n" + formatted(record.get("optimized_sql", "").strip()))
    trees = record.get("join_trees") or {}
    if trees.get("written"):
        print("\n-- join trees (estimated rows and size; the join algorithm asked of Spark)")
        for block, tree in trees["written"].items():
            chosen = (trees.get("chosen") or {}).get(block)
            print(f"{block}, as written:")
            print("\n".join("  " + line for line in render(tree)))
            if chosen is not None and chosen != tree:
                print(f"{block}, as rewritten:")
                print("\n".join("  " + line for line in render(chosen)))
        for block, tree in (trees.get("chosen") or {}).items():
            if block not in trees["written"]:  # a block a rewrite added (a skew split's branch)
                print(f"{block}, added by the rewrite:")
                print("\n".join("  " + line for line in render(tree)))
    print("\n-- decisions")
    for rule in record.get("rules", []):
        print(f"{rule['rule']}: {'fired' if rule['fired'] else 'did not fire'} ({rule['elapsed_ms']:.1f} ms)")
        for line in _decision_lines(rule.get("decisions", [])):
            print(f"  {line}")
    print("\n-- estimated rows per block")
    for block, estimate in (record.get("estimates") or {}).items():
        print(f"  {block}: {_estimate(estimate)}")
    print("\n-- statistics used")
    for table, used in (record.get("statistics_used") or {}).items():
        print(f"  {table}: {_estimate(used)}")
    for table, cost in (record.get("after_build_statistics") or {}).items():
        if cost.get("gathered") is False:
            print(f"  not gathered after the build: {table}: {cost['reason']}")
        else:
            print(f"  gathered {table} after the build in {cost.get('gather_seconds', 0):.2f} s")
    return 0


def _decision_lines(decisions: list[dict]) -> list[str]:
    """One line per decision, '+' fired and '-' skipped, led by its block when the rule decided in
    several; a line that repeats (the same skip for each key pair of a join) is printed once, counted.

    >>> _decision_lines([{"fired": False, "reason": "x is small", "block": "root"}] * 2)
    ['- x is small (2 times)']
    """
    blocks = {d.get("block") for d in decisions}
    lines: dict[str, int] = {}
    for decision in decisions:
        where = f"[{decision['block']}] " if len(blocks) > 1 and decision.get("block") else ""
        line = f"{'+' if decision['fired'] else '-'} {where}{decision['reason']}"
        lines[line] = lines.get(line, 0) + 1
    return [line if count == 1 else f"{line} ({count} times)" for line, count in lines.items()]


def summary(project_dir: str) -> int:
    folder = os.path.join(project_dir, "target", "hiveopt")
    if not os.path.isdir(folder):
        print(f"no records in {folder}: run dbt with a hiveopt profile first", file=sys.stderr)
        return 1
    rows = []
    records = []
    last, older = _last_invocation(project_dir), 0
    for name in sorted(n[:-5] for n in os.listdir(folder) if n.endswith(".json")):
        with open(os.path.join(folder, name + ".json")) as handle:
            record = json.load(handle)
        if last and record.get("invocation_id") != last:
            older += 1  # a model the last dbt invocation did not build
            continue
        records.append(record)
        fired = ", ".join(record.get("fired_rules") or []) or ("fallback" if record.get("fallback_reason") else "-")
        # Statistics gathered for the model: its inputs' on first read, its own after its build.
        seconds = model_statistics(record).gathered
        gather = f"{seconds:.2f}" if seconds else ""
        build = ratio = ""
        for cost in (record.get("after_build_statistics") or {}).values():
            if cost.get("gathered") is False:
                gather = gather or "unread"  # no model reads it: gathered on first read instead
                continue
            gather, build = f"{seconds:.2f}", f"{cost['build_seconds'] or 0:.2f}"
            ratio = f"{cost['cost_ratio']:.2f}" if cost.get("cost_ratio") is not None else ""
        q_error = f"{record['worst_q_error']:.2f}" if record.get("worst_q_error") is not None else ""
        added = _added_ms(record)
        rows.append((name, fired, record.get("optimizer_ms", 0), added, gather, build, ratio, q_error))
    width = max([len("rules fired")] + [len(r[1]) for r in rows])
    print(
        f"{'model':45} {'rules fired':{width}} {'opt ms':>7} {'added ms':>9} {'gather s':>9} {'build s':>8} "
        f"{'ratio':>6} {'q-error':>8}"
    )
    for name, fired, ms, added, gather, build, ratio, q_error in rows:
        print(f"{name:45} {fired:{width}} {ms:7.1f} {added:>9} {gather:>9} {build:>8} {ratio:>6} {q_error:>8}")
    if older:
        print(f"({older} records of earlier dbt invocations not shown)")
    built = _node_seconds(project_dir)
    if built:
        print(statistics_share(records, built).line())
    return 0


def _added_ms(record: dict) -> str:
    """The time hiveopt held the model before Spark built it (catalog reads, the optimizer, its
    record), statistics left out: its gathering (its own column) and the wait while another
    model's thread ran the invocation's first statistics pass.

    >>> _added_ms({"overhead_ms": 1250.0, "statistics_gathering": {"db.t": {"seconds": 1.2}}})
    '50.0'
    >>> _added_ms({"overhead_ms": 2950.0, "statistics_gathering": {"(waited ...)": {"waited_seconds": 2.9}}})
    '50.0'
    >>> _added_ms({"overhead_ms": 50.0, "statistics_gathering": {"(... behind ...)": {"seconds": 7.0, "behind": True}}})
    '50.0'
    >>> _added_ms({})
    ''
    """
    if record.get("overhead_ms") is None:
        return ""
    model = model_statistics(record)
    gathering = model.before + model.waited  # a pass behind the build is not its time
    return f"{max(float(record['overhead_ms']) - 1000 * gathering, 0.0):.1f}"


def _last_invocation(project_dir: str) -> str | None:
    """The id of dbt's last invocation in this project (its run_results.json), if any."""
    path = os.path.join(project_dir, "target", "run_results.json")
    try:
        with open(path) as handle:
            return (json.load(handle).get("metadata") or {}).get("invocation_id")
    except (OSError, ValueError):
        return None


def _node_seconds(project_dir: str) -> float:
    """Seconds dbt's last invocation spent in models and seeds (its run_results.json)."""
    path = os.path.join(project_dir, "target", "run_results.json")
    if not os.path.exists(path):
        return 0.0
    with open(path) as handle:
        results = json.load(handle).get("results") or []
    return sum(
        float(r.get("execution_time") or 0)
        for r in results
        if str(r.get("unique_id", "")).split(".")[0] in ("model", "seed")
    )


def analyze(names: list[str], project_dir: str, profiles_dir: str | None, target: str | None) -> int:
    from dbt.cli.main import dbtRunner

    relations = [n for n in names if n.count(".") == 1 and not n.startswith("source:")]
    models = [n for n in names if "." not in n]
    sources = [n[len("source:") :] for n in names if n.startswith("source:")]
    args = [
        "run-operation",
        "hiveopt_analyze",
        "--project-dir",
        project_dir,
        "--args",
        json.dumps({"relations": relations, "models": models, "sources": sources}),
    ]
    if profiles_dir:
        args += ["--profiles-dir", profiles_dir]
    if target:
        args += ["--target", target]
    result = dbtRunner().invoke(args)
    return 0 if result.success else 1


def cluster(args: argparse.Namespace) -> int:
    """`hiveopt cluster up|status|down`: a local Spark standalone cluster (local_cluster.py)."""
    from dbt.adapters.hiveopt import local_cluster

    state_dir = os.path.abspath(args.state_dir)
    if args.action == "status":
        print("\n".join(local_cluster.status_lines(state_dir)))
        return 0 if local_cluster.Cluster.load(state_dir) else 1
    if args.action == "down":
        local_cluster.down(state_dir, progress=lambda line: print(line, flush=True))
        return 0
    spec = local_cluster.ClusterSpec(
        state_dir,
        workers=args.workers,
        worker_cores=args.worker_cores,
        worker_memory=args.worker_memory,
        driver_memory=args.driver_memory,
        master_port=args.master_port,
        ui_port=args.ui_port,
        thrift_port=args.thrift_port,
        connect_port=args.connect_port,
    )

    def interrupted(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    # A SIGTERM while the JVMs start stops what was started (each runs in a group of its own and
    # would outlive this process otherwise), as Ctrl-C does.
    previous = signal.signal(signal.SIGTERM, interrupted)
    try:
        running = local_cluster.up(spec, progress=lambda line: print(line, flush=True))
    except RuntimeError as error:
        print(f"hiveopt cluster up: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as error:
        print(f"hiveopt cluster up: interrupted ({error or 'Ctrl-C'}); what it had started is stopped", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    print("\nProfile outputs for this cluster (paste them under your profile's `outputs:`):\n")
    print(local_cluster.profile_outputs(running.spec))
    print(f"\n`hiveopt cluster status --state-dir {state_dir}` says what runs; `hiveopt cluster down "
          f"--state-dir {state_dir}` stops it.")  # fmt: skip
    return 0


# The source syntax, the same in every help text that names it.
NAMES_HELP = "what to analyze: db.table, a model's name, or source:source_name.table"
PROJECT_DIR_HELP = "the dbt project (default: the current folder)"

COMMANDS = {
    "summary": "one line per model of the last dbt invocation: outcome, rules fired, optimizer time, worst "
    "q-error, statistics cost",
    "explain": "one model's record: the SQL as dbt compiled it and as run, its join trees (estimated and "
    "actual rows), the rules' decisions and the statistics used",
    "analyze": "gather statistics now, through dbt's own connection of the profile",
    "cluster": "a local Spark standalone cluster (a master, workers, one SQL server answering Thrift and Spark "
    "Connect): up starts it and prints the profile outputs, status says what runs, down stops it by pid",
}
CLUSTER_DEFAULTS = {
    "workers": (2, "workers started"),
    "worker_cores": (1, "cores each worker offers"),
    "worker_memory": ("1g", "memory each worker offers (its executor's heap)"),
    "driver_memory": ("2g", "heap of the SQL server's driver"),
    "master_port": (7077, "the master's port (0: a free one)"),
    "ui_port": (8080, "the master's web UI port (0: a free one)"),
    "thrift_port": (10000, "the Thrift port (0: a free one)"),
    "connect_port": (15002, "the Spark Connect port (0: a free one)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hiveopt",
        description="The optimizer's records and statistics of a dbt project built with hiveopt.",
        epilog=f"analyze NAME: {NAMES_HELP}. `hiveopt COMMAND --help` shows a command's arguments.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parsers = {name: commands.add_parser(name, help=text, description=text) for name, text in COMMANDS.items()}
    parsers["explain"].add_argument("model", metavar="MODEL", help="the model's name")
    parsers["analyze"].add_argument("names", nargs="+", metavar="NAME", help=NAMES_HELP)
    parsers["analyze"].add_argument("--profiles-dir", help="where profiles.yml is (default: dbt's own search)")
    parsers["analyze"].add_argument("--target", help="the profile's target (default: the profile's own)")
    for name in ("summary", "explain", "analyze"):
        parsers[name].add_argument("--project-dir", default=".", help=PROJECT_DIR_HELP)
    parsers["cluster"].add_argument("action", choices=("up", "status", "down"), help="what to do")
    parsers["cluster"].add_argument(
        "--state-dir",
        default=".hiveopt-cluster",
        help="the cluster's pids, logs, warehouse and metastore (default: .hiveopt-cluster in the current folder)",
    )
    for option, (default, text) in CLUSTER_DEFAULTS.items():
        parsers["cluster"].add_argument(
            "--" + option.replace("_", "-"), type=type(default), default=default, help=f"{text} (default {default})"
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "explain":
        return explain(args.model, args.project_dir)
    if args.command == "summary":
        return summary(args.project_dir)
    if args.command == "cluster":
        return cluster(args)
    return analyze(args.names, args.project_dir, args.profiles_dir, args.target)


def run(argv: list[str] | None = None) -> int:
    """The console entry point: `hiveopt explain x | head` ends quietly when the pipe closes."""
    try:
        code = main(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # Python flushes stdout again at exit; point it at /dev/null so that raises nothing either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(run())
