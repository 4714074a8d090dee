"""Join-order benchmark: TPC-H multi-join queries as written and in a bad order (same results),
plus a star of our own, run by plain dbt-spark and by hiveopt in the same process and warm
SparkSession, alternating, medians of N rounds. Prints per query the seconds of each, the
ratios, whether the rule reordered, and whether all four runs returned the same rows; then the
issue's targets, met or not.

    .venv/bin/python bench/join_order.py [--scale 1] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

QUERIES = ["q02", "q05", "q07", "q08", "q09", "q10", "q21", "star"]
VARIANTS = {"dbt-spark": ("spark", {}), "hiveopt": ("session", {})}


def reordered(model: str) -> str:
    rec = harness.record("hiveopt", model)
    fired = [d for r in rec["rules"] if r["rule"] == "reorder_joins" for d in r["decisions"] if d["fired"]]
    return f"yes ({len(fired)} block{'s' if len(fired) > 1 else ''})" if fired else "no"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="1")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    spark, common = harness.prepare(args.scale)
    models = [m for q in QUERIES for m in (q, f"{q}_bad")]
    print(f"TPC-H SF {args.scale}: one untimed hiveopt run gathers the sources' statistics")
    harness.dbt(
        ["run", "--select", *models, "--target", "session", "--vars", json.dumps(common)],
        os.path.join(harness.RESULTS, "setup"),
    )
    med, same = harness.measure(spark, models, models, VARIANTS, common, args.rounds)
    equal = {
        q: all(same[v][m] for v in VARIANTS for m in (q, f"{q}_bad"))
        and harness.rows(spark, q) == harness.rows(spark, f"{q}_bad")
        for q in QUERIES
    }
    print()
    header = (
        f"{'query':6} {'written: spark':>15} {'hiveopt':>8} {'ratio':>6} | {'bad: spark':>11} {'hiveopt':>8} "
        f"{'ratio':>6} "
        f"| {'bad hiveopt/best':>16} | {'equal':5} | reordered (written / bad)"
    )
    print(header)
    print("-" * len(header))
    misses = []
    for q in QUERIES:
        ws, wh = med["dbt-spark"][q], med["hiveopt"][q]
        bs, bh = med["dbt-spark"][f"{q}_bad"], med["hiveopt"][f"{q}_bad"]
        best = min(ws, wh)
        print(
            f"{q:6} {ws:15.2f} {wh:8.2f} {ws / wh:5.2f}x | {bs:11.2f} {bh:8.2f} {bs / bh:5.2f}x | {bh / best:15.2f}x | "
            f"{str(equal[q]):5} | {reordered(q)} / {reordered(q + '_bad')}"
        )
        if wh > 1.10 * ws:
            misses.append(f"{q}: as written, hiveopt {wh / ws:.2f}x dbt-spark (target <= 1.10x)")
        if bh > 1.15 * best:
            misses.append(f"{q}_bad: hiveopt {bh / best:.2f}x the best written order (target <= 1.15x)")
        if bs > 1.5 * best and bs / bh < 2.0:
            misses.append(
                f"{q}_bad: written order is bad ({bs / best:.1f}x), hiveopt only {bs / bh:.2f}x faster (target >= 2x)"
            )
    print(
        f"\nseconds: median of {args.rounds} model timings from dbt's run_results.json (hiveopt's include its "
        "statistics "
        "I/O and after-build gathering); ratio = dbt-spark / hiveopt; best = the faster of the two on the written order"
    )
    print("targets missed:" if misses else "targets: all met")
    for miss in misses:
        print("  - " + miss)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
