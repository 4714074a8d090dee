"""A server's task slots (Thrift, Connect: a Spark job to read its executors' cores) are asked only
when the skew split weighs a hot key's share against them: a pure probe says so before the rules
run (rules never query Spark), and leaves the query as it was; a model whose joins have no hot key
never asks."""

from dbt.adapters.hiveopt.optimizer import OptimizerConfig, OptimizerContext, StatsCatalog, optimize
from dbt.adapters.hiveopt.optimizer.pipeline import weighs_task_slots
from dbt.adapters.hiveopt.optimizer.prepare import prepare_query

SCHEMA = {"db": {"fact": {"k": "string", "v": "int"}, "dim": {"k": "string", "name": "string"}}}
FACT = {"row_count": 10**8, "size_bytes": 2 * 10**9, "columns": {"k": {"ndv": 10**6}}}
DIM = {"row_count": 10**7, "size_bytes": 4 * 10**8, "columns": {"k": {"ndv": 10**7}, "name": {"ndv": 10**7}}}
HOT = {**FACT, "columns": {"k": {"ndv": 10**6, "heavy_hitters": [["hot", 6 * 10**7]]}}}
SQL = "SELECT f.k, d.name FROM db.fact f JOIN db.dim d ON f.k = d.k"
CONFIG = {"rules": {"select_join_algorithms": False}}


def _stats(fact_stats):
    return StatsCatalog.from_dict({"db.fact": fact_stats, "db.dim": DIM})


def _probe(fact_stats, settings=CONFIG):
    expression = prepare_query(SQL, SCHEMA).expression
    written = expression.sql()
    weighs = weighs_task_slots(expression, SCHEMA, _stats(fact_stats), OptimizerConfig.from_dicts(settings))
    assert expression.sql() == written  # the probe splits a copy
    return weighs


def _split(slots):
    config = OptimizerConfig.from_dicts({**CONFIG, "task_slots": slots})
    result = optimize(SQL, OptimizerContext(schema=SCHEMA, statistics=_stats(HOT), config=config))
    (rule,) = [r for r in result.to_dict()["rules"] if r["rule"] == "rewrite_skew_joins"]
    (decision,) = rule["decisions"]
    return result, decision


def test_a_hot_key_is_weighed_against_the_slots():
    assert _probe(HOT)


def test_no_hot_key_weighs_nothing():
    assert not _probe(FACT)


def test_the_split_switched_off_weighs_nothing():
    assert not _probe(HOT, {"rules": {"rewrite_skew_joins": False}})


def test_the_slots_decide_the_split():
    # 60% of the rows on one key: over 2 slots a sort-merge join is no slower than the split (one
    # task takes 60%, the other slot would take 50% anyway), over 16 the split pays.
    few, decision = _split(2)
    assert not decision["fired"] and "with 2 task slots" in decision["reason"] and not few.changed
    many, decision = _split(16)
    assert decision["fired"] and decision["task_slots"] == 16 and many.fired_rules == ["rewrite_skew_joins"]


def _adapter_asks(fact_stats_in_order):
    """The adapter's own steps, model by model, with a server that answers 2 slots: what each
    model records, and how many times the server was asked."""
    from types import SimpleNamespace

    from dbt.adapters.hiveopt.connections import ServerTaskSlots
    from dbt.adapters.hiveopt.impl import SERVER_SLOTS, HiveoptAdapter

    asked = []
    adapter = SimpleNamespace(_server_slots=ServerTaskSlots(), _run_sql=lambda sql: asked.append(sql) or [(2,)])
    records = []
    for fact_stats in fact_stats_in_order:
        config = OptimizerConfig.from_dicts(CONFIG)
        context = SimpleNamespace(schema=SCHEMA, statistics=_stats(fact_stats))
        inputs = SimpleNamespace(prepared=prepare_query(SQL, SCHEMA), context=context)
        given = HiveoptAdapter._server_slots_for(adapter, config, inputs)
        records.append(HiveoptAdapter._slots_record(adapter, config, SERVER_SLOTS, given))
    return records, len(asked)


def test_only_a_model_that_weighs_a_hot_key_asks_or_records_the_slots_in_either_order():
    from dbt.adapters.hiveopt.impl import SERVER_SLOTS, SLOTS_NOT_ASKED

    not_asked, given = {"value": None, "from": SLOTS_NOT_ASKED}, {"value": 2, "from": SERVER_SLOTS}
    assert _adapter_asks([HOT, FACT]) == ([given, not_asked], 1)
    assert _adapter_asks([FACT, HOT]) == ([not_asked, given], 1)
    assert _adapter_asks([HOT, FACT, HOT]) == ([given, not_asked, given], 1)  # asked once per invocation
    assert _adapter_asks([FACT, FACT]) == ([not_asked, not_asked], 0)
