"""The join trees of the record: as written and as rewritten, with estimates and algorithms."""

from helpers.fixtures import context_for, load_cases

from dbt.adapters.hiveopt.optimizer import optimize
from dbt.adapters.hiveopt.optimizer.join_trees import NO_HINT, render


def _scans(node):
    if node["kind"] == "scan":
        return [node["alias"]]
    return [a for child in node["children"] for a in _scans(child)]


def _joins(node):
    if node["kind"] == "scan":
        return []
    return [node] + [j for child in node["children"] for j in _joins(child)]


def test_a_reorder_shows_the_order_before_and_after():
    case = next(c for c in load_cases("reorder_joins") if c.expected is not None)
    result = optimize(case.sql, context_for(case, only_rule="reorder_joins"))
    trees = result.to_dict()["join_trees"]
    written, chosen = trees["written"]["root"], trees["chosen"]["root"]
    assert sorted(_scans(written)) == sorted(_scans(chosen)) and _scans(written) != _scans(chosen)
    for node in _joins(written) + _joins(chosen):
        assert node["rows"] is not None and node["bytes"] is not None and node["precision"] != "absent"
        assert node["algorithm"] == NO_HINT  # the reorder alone asks for no algorithm
    assert render(chosen)[0].startswith("join inner on ")


def test_hints_show_as_the_join_algorithm():
    case = next(c for c in load_cases("select_join_algorithms") if c.expected is not None)
    result = optimize(case.sql, context_for(case, only_rule="select_join_algorithms"))
    chosen = result.join_trees["chosen"]
    algorithms = [j["algorithm"] for tree in chosen.values() for j in _joins(tree)]
    assert any(a.startswith(("BROADCAST ", "SHUFFLE_HASH ")) for a in algorithms), algorithms


def test_a_skew_split_adds_its_branches():
    case = next(c for c in load_cases("rewrite_skew_joins") if c.expected is not None)
    result = optimize(case.sql, context_for(case, only_rule="rewrite_skew_joins"))
    trees = result.join_trees
    assert len(trees["chosen"]) > len(trees["written"]), trees["chosen"].keys()
    added = [tree for block, tree in trees["chosen"].items() if block not in trees["written"]]
    assert any(j["algorithm"].startswith("BROADCAST") for tree in added for j in _joins(tree))


def test_a_query_without_joins_has_no_tree():
    case = next(c for c in load_cases("reorder_joins") if c.expected is not None)
    context = context_for(case)
    result = optimize("SELECT 1 AS one", context)
    assert result.join_trees == {"written": {}}
