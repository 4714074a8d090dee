"""Values from outside the query (settings, statistics payloads) are checked before any rule
uses them: a bad entry is refused with a message naming it, never turned into a different result."""

import pytest

from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, StatsCatalog, optimize
from dbt.adapters.hiveopt.optimizer.config import ConfigError, stats_settings, validate_settings
from dbt.adapters.hiveopt.optimizer.literals import key_literals, typed_value
from dbt.adapters.hiveopt.optimizer.statistics import StatisticsError, TableStats


@pytest.mark.parametrize(
    "value, data_type",
    [
        (None, "int"),
        ("2024/01/05", "date"),
        ("20240105", "date"),
        ("2024-02-30", "date"),
        (True, "int"),
        ("x", "int"),
        (2**31, "int"),
        (128, "tinyint"),
        ("1.234", "decimal(10,2)"),
        (10**9, "decimal(10,2)"),
        (float("nan"), "double"),
        (float("inf"), "double"),
        (1.5, "string"),
        ("2024-01-05+02:00", "timestamp"),
        ({"a": 1}, "string"),
        ("x", "map<string,int>"),
    ],
)
def test_values_that_do_not_convert_are_refused(value, data_type):
    typed, problem = typed_value(value, data_type)
    assert typed is None and problem


@pytest.mark.parametrize(
    "value, data_type, typed",
    [
        ("42", "int", "42"),
        (42.0, "bigint", "42"),
        ("2024-01-05", "date", "2024-01-05"),
        (7, "string", "7"),
        ("1.25", "decimal(10,2)", "1.25"),
        (1, "decimal(10,2)", "1.00"),
        ("2024-01-05 10:00", "timestamp", "2024-01-05 10:00:00"),
    ],
)
def test_values_that_convert_are_written_canonically(value, data_type, typed):
    converted, problem = typed_value(value, data_type)
    assert problem is None and str(converted) == typed


def test_no_null_ever_reaches_a_key_list():
    literals, dropped = key_literals([None, "hot", None, "it's"], "string")
    assert [literal.sql("spark") for literal in literals] == ["'hot'", "'it\\'s'"] and len(dropped) == 2


def test_model_settings_problems_are_listed_and_ignored():
    config = OptimizerConfig.from_dicts(
        {"task_slots": 4},
        {
            "skewed_keys": {"db.fact": {"k": [None, "hot"]}},
            "rules": {"reorder_joins": "false", "no_such_rule": True},
            "broadcast_threshold_bytes": "lots",
            "verify": "yes",
            "nonsense": 1,
        },
    )
    assert config.skewed_keys == {"db.fact": {"k": ["hot"]}}
    assert config.rule_enabled("reorder_joins") is False  # "false" is off, not bool("false")
    assert config.broadcast_threshold_bytes == 10 * 1024 * 1024 and config.task_slots == 4 and config.verify
    assert len(config.problems) == 4
    assert any("skewed_keys['db.fact']['k']: NULL" in p for p in config.problems)
    assert any("no_such_rule" in p for p in config.problems)
    assert any("broadcast_threshold_bytes" in p for p in config.problems)
    assert any("nonsense" in p for p in config.problems)


def test_profile_problems_are_an_error():
    with pytest.raises(ConfigError, match="task_slots"):
        OptimizerConfig.from_dicts({"task_slots": 0})
    assert validate_settings({"stats": {"auto_gather": "off", "schema": "hiveopt"}}) == ({}, [])
    assert validate_settings({"stats": {"schema": "x; drop"}})[1]


def test_a_size_factor_under_one_is_refused():
    """stats.keep_within_size is a factor: 1 keeps nothing (off), under 1 means nothing."""
    assert stats_settings({"stats": {"keep_within_size": "1.25"}}) == {"keep_within_size": 1.25}
    assert stats_settings({"stats": {"keep_within_size": 1}}) == {"keep_within_size": 1.0}
    for bad in (0.9, 0, "daily", float("inf")):
        assert any("keep_within_size" in p for p in validate_settings({"stats": {"keep_within_size": bad}})[1])


def test_the_first_pass_mode_is_wait_or_behind():
    """stats.first_pass: `wait` (the default) or `behind`, also as text in any case."""
    assert stats_settings({"stats": {"first_pass": "Behind"}}) == {"first_pass": "behind"}
    assert stats_settings({"stats": {"first_pass": "wait"}}) == {"first_pass": "wait"}
    for bad in ("later", True, 1, None):
        problems = validate_settings({"stats": {"first_pass": bad}})[1]
        assert any("first_pass" in p and "wait, behind" in p for p in problems), problems


def test_a_reorder_gain_under_one_is_refused():
    """reorder_min_gain 1 writes any cheaper order; under 1 it would write a dearer one."""
    assert OptimizerConfig.from_dicts({"reorder_min_gain": "1.2"}).reorder_min_gain == 1.2
    assert OptimizerConfig.from_dicts(None, {"reorder_min_gain": 1}).reorder_min_gain == 1.0
    for bad in (0.9, -1, "fast", float("nan")):
        with pytest.raises(ConfigError, match="reorder_min_gain"):
            OptimizerConfig.from_dicts({"reorder_min_gain": bad})


def test_a_retired_rule_switch_is_accepted_and_ignored():
    """reuse_repeated_subqueries left the rule list (it rewrote nothing); profiles that name it pass."""
    assert validate_settings({"rules": {"reuse_repeated_subqueries": False}}) == ({"rules": {}}, [])
    assert "unknown rule 'reuse'" in validate_settings({"rules": {"reuse": False}})[1][0]


@pytest.mark.parametrize(
    "payload",
    [
        {"row_count": "many"},
        {"row_count": -1},
        {"row_count": float("nan")},
        {"columns": [1]},
        {"columns": {"k": {"heavy_hitters": [[1]]}}},
        {"columns": {"k": {"heavy_hitters": [["a", "b"]]}}},
        {"columns": {"k": {"ndv": {"value": 3, "precision": "roughly"}}}},
        {"columns": {"k": {"min": [1, 2]}}},
        {"columns": {"k": "x"}},
        [1, 2],
    ],
)
def test_payloads_that_are_not_statistics_are_refused(payload):
    with pytest.raises(StatisticsError):
        TableStats.from_dict(payload)


def test_null_heavy_hitters_are_dropped_when_read():
    stats = TableStats.from_dict({"row_count": 100, "columns": {"k": {"heavy_hitters": [[None, 90], ["hot", 9]]}}})
    assert stats.column("k").heavy_hitters == [("hot", 9.0)]


SCHEMA = {"db": {"fact": {"k": "string", "v": "int"}, "dim": {"k": "string", "name": "string"}}}
STATS = {
    "db.fact": {"row_count": 10**8, "size_bytes": 2 * 10**9, "columns": {"k": {"ndv": 10**6}}},
    "db.dim": {"row_count": 10**7, "size_bytes": 4 * 10**8, "columns": {"k": {"ndv": 10**7}, "name": {"ndv": 10**7}}},
}
LEFT = "SELECT f.k, d.name FROM db.fact f LEFT JOIN db.dim d ON f.k = d.k"


def _skew(model_settings, stats=STATS):
    config = OptimizerConfig.from_dicts({"task_slots": 2, "rules": {"select_join_algorithms": False}}, model_settings)
    return optimize(LEFT, OptimizerContext(schema=SCHEMA, statistics=StatsCatalog.from_dict(stats), config=config))


def test_the_issue_repro_skewed_keys_none_hot():
    result = _skew({"skewed_keys": {"db.fact": {"k": [None, "hot"]}}})
    assert result.fired_rules == ["rewrite_skew_joins"]
    assert "NULL" not in result.sql.replace("IS NULL", "")
    assert "NOT f.k IN ('hot')" in result.sql


def test_heavy_hitters_with_a_null_or_a_wrong_type_never_reach_the_list():
    stats = {
        **STATS,
        "db.fact": {
            **STATS["db.fact"],
            "columns": {"k": {"ndv": 10**6, "heavy_hitters": [[None, 5 * 10**7], ["hot", 9 * 10**7]]}},
        },
    }
    result = _skew({}, stats)
    assert result.fired_rules == ["rewrite_skew_joins"] and "IN ('hot')" in result.sql
    assert "NULL" not in result.sql.replace("IS NULL", "")


def test_a_date_that_does_not_convert_is_dropped_with_a_warning_naming_the_setting():
    schema = {"db": {"fact": {"k": "date"}, "dim": {"k": "date", "name": "string"}}}
    config = OptimizerConfig.from_dicts(
        {"task_slots": 2, "rules": {"select_join_algorithms": False}},
        {"skewed_keys": {"db.fact": {"k": ["2024/01/05"]}}},
    )
    result = optimize(LEFT, OptimizerContext(schema=schema, statistics=StatsCatalog.from_dict(STATS), config=config))
    assert not result.changed
    assert result.warnings == ["skewed_keys of db.fact.k: '2024/01/05' is not a date (YYYY-MM-DD); ignored"]
