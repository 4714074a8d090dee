"""Broadcast benchmark: the bench models on TPC-H, run by plain dbt-spark and by hiveopt with
select_join_algorithms off and on, in the same process and warm SparkSession, alternating,
medians of N rounds. Seconds are dbt's own model timings (run_results.json); hiveopt's include
its statistics I/O and after-build gathering.

    .venv/bin/python bench/broadcast.py [--scale 1] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

MODELS = ["bench_month_orders", "bench_segment_customers", "bench_unfiltered_orders"]
VARIANTS = {
    "dbt-spark": ("spark", {}),
    "hiveopt rule off": ("session", {"bench_rule": False}),
    "hiveopt": ("session", {"bench_rule": True}),
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="1")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    spark, common = harness.prepare(args.scale)
    print(f"TPC-H SF {args.scale}: building staging tables once (hiveopt gathers their statistics)")
    harness.dbt(
        ["run", "--select", "staging", "--target", "session", "--vars", json.dumps(common)],
        os.path.join(harness.RESULTS, "setup"),
    )
    med, same = harness.measure(spark, MODELS, MODELS, VARIANTS, common, args.rounds)
    print()
    header = (
        f"{'model':26} {'dbt-spark':>10} {'rule off':>10} {'hiveopt':>10} {'ratio':>7}  {'same rows':9} "
        f"{'opt ms':>7} {'gather s':>8}  rule fired"
    )
    print(header)
    print("-" * len(header))
    for model in MODELS:
        rec = harness.record("hiveopt", model)
        hints = [
            f"{d['hint']}({d['relation']})"
            for r in rec["rules"]
            for d in r["decisions"]
            if d["fired"] and d.get("hint")
        ]
        gather = sum(v.get("gather_seconds", 0.0) for v in (rec.get("after_build_statistics") or {}).values())
        print(
            f"{model:26} {med['dbt-spark'][model]:10.2f} {med['hiveopt rule off'][model]:10.2f} "
            f"{med['hiveopt'][model]:10.2f} "
            f"{med['dbt-spark'][model] / med['hiveopt'][model]:6.2f}x  {str(all(s[model] for s in same.values())):9} "
            f"{rec['optimizer_ms']:7.1f} {gather:8.2f}  {', '.join(hints) or 'no'}"
        )
    print(
        f"\nseconds: median of {args.rounds} model timings from dbt's run_results.json (hiveopt's include its "
        "statistics I/O and the after-build gathering shown as 'gather s'); ratio = dbt-spark / hiveopt"
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
