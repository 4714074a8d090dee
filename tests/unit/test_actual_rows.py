"""Matching Spark's measured plan to the join tree (actual_rows.py), on plans as Spark draws them."""

from dbt.adapters.hiveopt.actual_rows import SparkPlan, attach_actuals, worst_q_error


def _scan(alias, relation, rows):
    return {"kind": "scan", "alias": alias, "relation": relation, "rows": rows}


def test_views_resolve_to_the_tables_spark_scans():
    plan = SparkPlan(
        nodes={1: ("SortMergeJoin", 90), 2: ("Scan parquet spark_catalog.src.orders", 100), 3: ("Filter", 30),
               4: ("Scan parquet spark_catalog.src.customers", 50)},
        children={1: [2, 3], 3: [4]},
    )  # fmt: skip
    tree = {"kind": "join", "rows": 100, "children": [_scan("o", "an.stg_orders", 100), _scan("c", "an.stg_c", 10)]}
    attach_actuals(
        tree, plan, {"an.stg_orders": ["src.orders"], "an.stg_c": ["an.stg_c2"], "an.stg_c2": ["src.customers"]}
    )
    assert tree["actual_rows"] == 90 and tree["q_error"] == round(100 / 90, 3)
    assert tree["children"][0]["actual_rows"] == 100
    assert tree["children"][1]["actual_rows"] == 30 and tree["children"][1]["q_error"] == 3.0  # view over a view
    assert worst_q_error({"root": tree}) == 3.0


def test_each_read_of_a_table_read_twice_and_a_cte_get_no_actual():
    plan = SparkPlan(
        nodes={1: ("BroadcastHashJoin", 5), 2: ("Scan parquet spark_catalog.db.t", 10),
               3: ("Scan parquet spark_catalog.db.t", 10)},
        children={1: [2, 3]},
    )  # fmt: skip
    tree = {"kind": "join", "rows": 5, "children": [_scan("a", "db.t", 10), _scan("b", "db.t", 10)]}
    attach_actuals(tree, plan, {})
    # Which read of db.t is which side is ambiguous; the join itself reads both, and is not.
    assert tree["actual_rows"] == 5 and not any("actual_rows" in side for side in tree["children"])
    cte = {"kind": "join", "rows": 5, "children": [_scan("a", "db.t", 10), _scan("x", "__dbt__cte__x", 3)]}
    attach_actuals(cte, plan, {})
    assert "actual_rows" not in cte and worst_q_error({"root": cte}) is None
