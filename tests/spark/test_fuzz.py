"""The differential fuzzer (fuzz/ at the repository's root) on a fixed-seed slice of 250
queries: random queries over small tables with NULL, duplicate and hot keys, random statistics
and config (absurd ones included); original and optimized SQL run on the session's Spark must
return the same rows under the same column names, and the optimized SQL must not fail where the
original ran. Each rewriting rule must fire on at least 5% of the slice, or the slice no longer
tests it. A longer run: `.venv/bin/python -m fuzz --queries 2000 --seed 1`."""

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from fuzz.minimize import report  # noqa: E402
from fuzz.runner import MIN_FIRE_SHARE, REWRITING_RULES, run  # noqa: E402
from fuzz.tables import build_data  # noqa: E402

pytestmark = pytest.mark.spark
# Its 4 tests wait on one fixture of 250 queries (about two minutes): early, not last (conftest).
SEND_FIRST = True

SEED = 1
QUERIES = int(os.environ.get("HIVEOPT_FUZZ_QUERIES", "250"))


@pytest.fixture(scope="module")
def summary(spark):
    # Queries the optimizer leaves unchanged are not run: nothing to compare (time).
    return run(spark, build_data(), QUERIES, SEED, run_unchanged=False, progress=None)


def _repros(summary, kinds):
    found = [o for o in summary.failures if o.kind in kinds]
    return f"{len(found)} case(s):\n" + "\n".join(report(o) for o in found[:5])


def test_optimized_sql_returns_the_same_rows(summary):
    assert summary.kinds["mismatch"] == 0, _repros(summary, ("mismatch",))


def test_optimized_sql_never_fails_where_the_original_ran(summary):
    assert summary.kinds["optimized_error"] == 0, _repros(summary, ("optimized_error",))


def test_the_optimizer_never_raises(summary):
    assert summary.kinds["optimizer_raised"] == 0, _repros(summary, ("optimizer_raised",))
    assert summary.kinds["nondeterministic_duplicated"] == 0, _repros(summary, ("nondeterministic_duplicated",))
    assert summary.kinds["nondeterministic_fetched"] == 0, _repros(summary, ("nondeterministic_fetched",))


def test_the_slice_exercises_every_rewriting_rule(summary):
    shares = {rule: summary.fired[rule] / summary.queries for rule in REWRITING_RULES}
    quiet = {rule: f"{share:.1%}" for rule, share in shares.items() if share < MIN_FIRE_SHARE}
    assert not quiet, f"rules firing on less than {MIN_FIRE_SHARE:.0%} of the slice: {quiet}"
    # The generator's own health: its queries run, and most are rewritten and compared.
    assert summary.kinds["original_error"] <= 0.02 * summary.queries, [
        (o.error, o.case.query.sql) for o in summary.original_errors[:3]
    ]
    assert summary.both_ran >= 0.5 * summary.queries
