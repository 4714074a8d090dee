"""`python -m fuzz --queries N --seed S [--out DIR]`: run the differential fuzzer on a local Spark.

Prints the counts (queries, original ran, changed, executed both ways, fallbacks by reason,
per-rule fire counts, mismatches, optimized-only errors, original errors with a few examples,
time), a minimized repro of every failure (also written as JSON to DIR), and a warning for each
rewriting rule that fired on fewer than 5% of the queries. Exit code 1 on any mismatch,
optimized-only error, optimizer exception or duplicated rand(); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import sys

import fuzz
from fuzz.minimize import Minimizer, record, report
from fuzz.runner import Runner, make_case, run, write_finding
from fuzz.session import local_session
from fuzz.tables import DEFAULT_SEED, build_data, create_tables


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="fuzz-findings", help="folder for the repro JSON files (default: %(default)s)")
    parser.add_argument("--start", type=int, default=0, help="index of the first case")
    parser.add_argument("--case", type=int, default=None, help="replay this one case and print it")
    parser.add_argument("--data-seed", type=int, default=DEFAULT_SEED, help="seed of the tables' data")
    parser.add_argument("--skip-unchanged", action="store_true", help="do not run queries the optimizer left unchanged")
    parser.add_argument("--no-minimize", action="store_true")
    parser.add_argument("--minimize-attempts", type=int, default=300)
    parser.add_argument("--progress-every", type=int, default=200)
    args = parser.parse_args(argv)

    data = build_data(args.data_seed)
    print(f"optimizer under test: {fuzz.optimizer_origin()}", flush=True)
    with local_session() as spark:
        create_tables(spark, data)
        if args.case is not None:
            return replay(spark, data, args.seed, args.case)
        runner_for_minimizing = Runner(spark, data)
        written = []

        def on_failure(outcome):
            attempts, best = 0, outcome
            if not args.no_minimize:
                minimizer = Minimizer(runner_for_minimizing, max_attempts=args.minimize_attempts)
                best = minimizer.minimize(outcome)
                attempts = minimizer.attempts
            print(report(best, attempts), flush=True)
            written.append(write_finding(args.out, record(best, outcome, attempts)))

        summary = run(
            spark,
            data,
            args.queries,
            args.seed,
            on_failure=on_failure,
            run_unchanged=not args.skip_unchanged,
            progress_every=args.progress_every,
            start=args.start,
        )
        runner_for_minimizing.close()
    print("=" * 100)
    print(
        f"fuzz run: seed {args.seed}, cases {args.start}..{args.start + args.queries - 1}, data seed {args.data_seed}"
    )
    for line in summary.lines():
        print(line)
    if summary.original_errors:
        print("original errors (first 5):")
        for outcome in summary.original_errors[:5]:
            print(f"  case {outcome.case.index} ({outcome.case.query.shape}): {outcome.error[:300]}")
            print(f"    {outcome.case.query.sql[:1000]}")
    if written:
        print(f"repros written: {', '.join(written)}")
    return 1 if summary.failures else 0


def replay(spark, data, seed: int, index: int) -> int:
    case = make_case(data, seed, index)
    runner = Runner(spark, data)
    try:
        outcome = runner.run_case(case)
    finally:
        runner.close()
    print(report(outcome))
    print(f"outcome: {outcome.kind}; {outcome.detail or outcome.error or ''}")
    return 1 if outcome.failed else 0


if __name__ == "__main__":
    sys.exit(main())
