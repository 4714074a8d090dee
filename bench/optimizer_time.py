"""Optimizer time: synthetic 12- and 20-relation join blocks (star and chain), timed through the
whole optimizer (parse, qualify, every rule, generation), and the p50/p95 of the optimizer time
recorded for the models of the last benchmark run (bench/results/hiveopt/hiveopt/*.json).

    .venv/bin/python bench/optimizer_time.py
"""

from __future__ import annotations

import glob
import json
import os
import statistics
import sys
import time

from dbt.adapters.hiveopt.optimizer import OptimizerContext, StatsCatalog, optimize

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


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
    records = glob.glob(os.path.join(RESULTS, "hiveopt", "hiveopt", "*.json"))
    if records:
        ms = sorted(json.load(open(p))["optimizer_ms"] for p in records)
        p95 = ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))]
        print(
            f"\nbenchmark models ({len(ms)}): optimizer p50 {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms, "
            f"max {ms[-1]:.1f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
