"""Optimizer time: synthetic 12- and 20-relation join blocks (star and chain), timed through the
whole optimizer (parse, qualify, every rule, generation); the per-rule time distribution over the
fixture models (tests/fixtures/optimizer, with their statistics and settings) and over random
fuzz queries; and the p50/p95 recorded for the models of the last benchmark run
(bench/results/hiveopt/hiveopt/*.json), per rule too.

    .venv/bin/python bench/optimizer_time.py
"""

from __future__ import annotations

import glob
import json
import os
import statistics
import sys
import time

from dbt.adapters.hiveopt.optimizer import RULE_NAMES, OptimizerContext, StatsCatalog, optimize

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTSIDE = "outside the rules (parse, qualify, estimates, SQL)"


def quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def print_distribution(title: str, runs: list[tuple[float, dict[str, float]]]) -> None:
    """runs: (whole optimizer ms, {rule: ms}) per model."""
    totals = [total for total, _ in runs]
    print(
        f"\n{title} ({len(runs)}): optimizer p50 {quantile(totals, 0.5):.1f} ms, "
        f"p95 {quantile(totals, 0.95):.1f} ms, max {max(totals):.1f} ms"
    )
    per_part = {OUTSIDE: [total - sum(rules.values()) for total, rules in runs]}
    for rule in RULE_NAMES:
        per_part[rule] = [rules[rule] for _, rules in runs if rule in rules]
    for part, values in per_part.items():
        if values:
            print(
                f"  {part:52} p50 {quantile(values, 0.5):6.2f}  p95 {quantile(values, 0.95):6.2f}  "
                f"max {max(values):7.1f} ms"
            )


def timed(sql: str, context: OptimizerContext) -> tuple[float, dict[str, float]]:
    result = optimize(sql, context)
    return result.elapsed_ms, {r.rule: r.elapsed_ms for r in result.rules if r.enabled}


def fixture_runs() -> list[tuple[float, dict[str, float]]]:
    sys.path.insert(0, os.path.join(REPO, "tests"))
    from helpers.fixtures import context_for, load_cases

    return [timed(case.sql, context_for(case)) for rule in RULE_NAMES for case in load_cases(rule)]


def fuzz_runs(count: int) -> list[tuple[float, dict[str, float]]]:
    sys.path.insert(0, REPO)
    from fuzz.runner import Runner, make_case
    from fuzz.tables import build_data

    data = build_data()
    runs = []
    for index in range(count):
        case = make_case(data, 1, index)
        try:
            config, statistics = Runner.inputs(case)
        except Exception:  # a profile the config refuses: dbt would stop before the optimizer
            continue
        context = OptimizerContext(
            schema=data.schema(),
            statistics=statistics,
            config=config,
            materialization=case.materialization,
            partitioning=data.partitioning(),
        )
        runs.append(timed(case.query.sql, context))
    return runs


def synthetic(n: int, shape: str):
    schema = {"s": {f"t{i}": {"k": "bigint", "f": "bigint", "v": "string"} for i in range(n)}}
    stats = StatsCatalog.from_dict(
        {
            f"s.t{i}": {
                "row_count": 10 ** (3 + i % 6),
                "columns": {
                    "k": {"ndv": 10 ** (3 + i % 6)},
                    "f": {"ndv": 10 ** (2 + i % 5)},
                    "v": {"ndv": 100, "avg_width": 8},
                },
            }
            for i in range(n)
        }
    )
    joins = []
    for i in range(1, n):
        other = 0 if shape == "star" else i - 1
        joins.append(f"JOIN s.t{i} ON t{i}.k = t{other}.f")
    filters = " AND ".join(f"t{i}.v = 'x'" for i in range(1, n, 3))
    sql = f"SELECT t0.v, COUNT(*) AS n FROM s.t0 {' '.join(joins)} WHERE {filters} GROUP BY t0.v"
    return sql, OptimizerContext(schema=schema, statistics=stats)


def main() -> int:
    print(f"{'block':16} {'median ms':>10} {'max ms':>8}  method")
    for n in (12, 20):
        for shape in ("star", "chain"):
            sql, context = synthetic(n, shape)
            times, method = [], ""
            for _ in range(5):
                started = time.perf_counter()
                result = optimize(sql, context)
                times.append((time.perf_counter() - started) * 1000)
                decisions = [d for r in result.rules if r.rule == "reorder_joins" for d in r.decisions]
                method = decisions[0].details.get("method", decisions[0].reason) if decisions else "-"
            print(f"{shape + ' ' + str(n):16} {statistics.median(times):10.1f} {max(times):8.1f}  {method}")
    print_distribution("fixture models", fixture_runs())
    print_distribution("fuzz queries (seed 1)", fuzz_runs(500))
    records = [json.load(open(p)) for p in glob.glob(os.path.join(RESULTS, "hiveopt", "hiveopt", "*.json"))]
    records = [r for r in records if "optimizer_ms" in r]
    if records:
        runs = [
            (r["optimizer_ms"], {x["rule"]: x["elapsed_ms"] for x in r.get("rules", []) if x["enabled"]})
            for r in records
        ]
        print_distribution("models of the last benchmark run", runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
