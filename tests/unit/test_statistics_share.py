"""The statistics share that `hiveopt summary` and the project benchmark print: gathering against
building, where the models' waits for the invocation's first pass count as neither."""

import json

from dbt.adapters.hiveopt.cli import summary
from dbt.adapters.hiveopt.model_inputs import FIRST_PASS, FIRST_PASS_BEHIND, FIRST_PASS_WAIT
from dbt.adapters.hiveopt.statistics_share import statistics_share

INVOCATION = "inv-1"


def first_build_records(pass_seconds=5.0, waits=(4.0, 5.0, 5.0)):
    """A first build of four marts on four threads: one runs the pass, three wait for it."""
    ran = {"model": "a", "statistics_gathering": {FIRST_PASS: {"seconds": pass_seconds, "tables": ["s.t"]}}}
    waited = [
        {"model": name, "statistics_gathering": {FIRST_PASS_WAIT: {"waited_seconds": w, "tables": ["s.t"]}}}
        for name, w in zip("bcd", waits)
    ]
    return [ran, *waited]


def test_waits_for_the_first_pass_are_not_building():
    # dbt's seconds of the four marts: each holds its wait (or the pass) and 2 s of building.
    built = (5.0 + 2) + (4.0 + 2) + (5.0 + 2) + (5.0 + 2)
    share = statistics_share(first_build_records(), built)
    assert (share.gathered, share.waited, share.waiting_models, share.building) == (5.0, 14.0, 3, 8.0)
    assert round(share.percent) == 62
    # Counted as building, the waits would have made it 5 / 22 s: 23%.
    assert "(62%; 3 models waited 14.0 s in all for the first pass, counted as neither)" in share.line()


def test_a_pass_behind_the_builds_is_in_no_models_seconds():
    records = [{"statistics_gathering": {FIRST_PASS_BEHIND: {"seconds": 6.0, "behind": True}}}]
    share = statistics_share(records, built_seconds=30.0)
    assert (share.gathered, share.building) == (6.0, 30.0)
    assert share.line() == "statistics gathering: 6.0 s against 30.0 s of building the models and seeds (20%)"


def test_after_build_passes_count_and_skipped_ones_do_not():
    records = [
        {
            "after_build_statistics": {
                "db.read_later": {"gathered": True, "gather_seconds": 1.5},
                "db.leaf": {"gathered": False, "reason": "no model reads it"},
            }
        }
    ]
    share = statistics_share(records, built_seconds=11.5)
    assert (share.gathered, share.waited, share.building) == (1.5, 0.0, 10.0)


def test_summary_prints_the_share_of_the_last_invocation(tmp_path, capsys):
    records = tmp_path / "target" / "hiveopt"
    records.mkdir(parents=True)
    for record in first_build_records():
        (records / f"{record['model']}.json").write_text(json.dumps({**record, "invocation_id": INVOCATION}))
    (records / "old.json").write_text(
        json.dumps({"model": "old", "invocation_id": "inv-0", "statistics_gathering": {FIRST_PASS: {"seconds": 9.0}}})
    )
    results = [{"unique_id": f"model.p.{m}", "execution_time": t} for m, t in zip("abcd", (7.0, 6.0, 7.0, 7.0))]
    results.append({"unique_id": "test.p.not_null_a", "execution_time": 3.0})  # tests are not building
    (tmp_path / "target" / "run_results.json").write_text(
        json.dumps({"metadata": {"invocation_id": INVOCATION}, "results": results})
    )
    assert summary(str(tmp_path)) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == (
        "statistics gathering: 5.0 s against 8.0 s of building the models and seeds "
        "(62%; 3 models waited 14.0 s in all for the first pass, counted as neither)"
    )
