"""The memory of outcomes (feedback.py): which SQL a build runs, from what earlier builds measured."""

from dbt.adapters.hiveopt.feedback import Outcome, choose, outcomes_of, rewrite_fingerprint, store_name

REWRITE = rewrite_fingerprint("select a from t join u using (k)", "SELECT /*+ BROADCAST(u) */ a FROM t JOIN u")


def outcome(variant, seconds, input_bytes=1e9, rewrite=REWRITE, day="2026-11-20"):
    return Outcome(variant, rewrite, seconds, input_bytes, f"{day}T06:00:00+00:00")


def test_a_new_rewrite_runs_optimized_then_as_written_then_the_faster():
    first = choose(REWRITE, 1e9, {})
    assert (first.variant, first.explore) == ("optimized", True)
    second = choose(REWRITE, 1e9, {"optimized": outcome("optimized", 7.9)})
    assert (second.variant, second.explore) == ("original", True)
    kept = choose(REWRITE, 1.2e9, {"optimized": outcome("optimized", 7.9), "original": outcome("original", 4.9)})
    assert (kept.variant, kept.explore) == ("original", False)
    assert kept.why == "kept original: optimized 7.9 s vs original 4.9 s on 2026-11-20"
    faster = choose(REWRITE, 1e9, {"optimized": outcome("optimized", 2.0), "original": outcome("original", 5.0)})
    assert (faster.variant, faster.why) == (
        "optimized",
        "kept optimized: optimized 2.0 s vs original 5.0 s on 2026-11-20",
    )


def test_the_optimized_sql_must_win_by_the_margin():
    """Within 5% the SQL as written runs: one build each is a noisy measure, and a rewrite that is
    not clearly faster is not worth its risk."""
    close = choose(REWRITE, 1e9, {"optimized": outcome("optimized", 4.8), "original": outcome("original", 5.0)})
    assert close.variant == "original"


def test_another_rewrite_or_inputs_of_another_size_are_measured_again():
    measured = {"optimized": outcome("optimized", 2.0), "original": outcome("original", 5.0)}
    other = rewrite_fingerprint("select a from t join u using (k)", "SELECT /*+ SHUFFLE_HASH(u) */ a FROM t JOIN u")
    assert choose(other, 1e9, measured).why.startswith("first build of this rewrite")
    assert choose(REWRITE, 2.5e9, measured).explore  # grown more than 2x since
    assert choose(REWRITE, 0.4e9, measured).explore  # shrunk more than 2x
    assert not choose(REWRITE, 1.9e9, measured).explore


def test_stored_payloads_that_do_not_parse_are_no_outcome():
    rows = {
        store_name("db.m", "optimized"): outcome("optimized", 3.0).payload(),
        store_name("db.m", "original"): '{"variant": "original", "seconds": "slow"}',
    }
    assert set(outcomes_of(rows, "db.m")) == {"optimized"}
    assert outcomes_of({store_name("db.m", "optimized"): "not json"}, "db.m") == {}
