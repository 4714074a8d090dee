"""A server's task slots (Thrift, Connect: a Spark job to read its executors' cores) are asked only
when the skew split weighs a hot key's share, once per model, and the answer is what it weighs
with; a model whose joins have no hot key never asks."""

from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, StatsCatalog, optimize

SCHEMA = {"db": {"fact": {"k": "string", "v": "int"}, "dim": {"k": "string", "name": "string"}}}
FACT = {"row_count": 10**8, "size_bytes": 2 * 10**9, "columns": {"k": {"ndv": 10**6}}}
DIM = {"row_count": 10**7, "size_bytes": 4 * 10**8, "columns": {"k": {"ndv": 10**7}, "name": {"ndv": 10**7}}}
HOT = {**FACT, "columns": {"k": {"ndv": 10**6, "heavy_hitters": [["hot", 6 * 10**7]]}}}
SQL = "SELECT f.k, d.name FROM db.fact f JOIN db.dim d ON f.k = d.k"


def _run(fact_stats, slots=2):
    asked = []

    def ask():
        asked.append(True)
        return slots

    config = OptimizerConfig.from_dicts({"rules": {"select_join_algorithms": False}})
    config.ask_task_slots = ask
    stats = StatsCatalog.from_dict({"db.fact": fact_stats, "db.dim": DIM})
    return optimize(SQL, OptimizerContext(schema=SCHEMA, statistics=stats, config=config)), config, asked


def _skew_decisions(result):
    (rule,) = [r for r in result.to_dict()["rules"] if r["rule"] == "rewrite_skew_joins"]
    return rule["decisions"]


def test_a_hot_key_asks_once_and_weighs_with_the_answer():
    result, config, asked = _run(HOT, slots=16)
    assert asked == [True]
    assert config.task_slots == 16 and config.ask_task_slots is None
    (decision,) = _skew_decisions(result)
    assert decision["fired"] and decision["task_slots"] == 16, decision
    assert result.fired_rules == ["rewrite_skew_joins"]


def test_the_answer_decides_the_split():
    # 60% of the rows on one key: over 2 slots a sort-merge join is no slower than the split
    # (one task takes 60%, the other slot would take 50% anyway), over 16 the split pays.
    result, _, asked = _run(HOT, slots=2)
    (decision,) = _skew_decisions(result)
    assert asked == [True] and not decision["fired"]
    assert "with 2 task slots" in decision["reason"], decision
    assert not result.changed


def test_no_hot_key_never_asks():
    result, config, asked = _run(FACT)
    assert asked == [] and config.ask_task_slots is not None
    assert not result.changed


def test_a_server_that_cannot_say_leaves_the_default():
    _, config, asked = _run(HOT, slots=None)
    assert asked == [True] and config.task_slots == OptimizerConfig().task_slots
